//go:build race

package campaign

// raceOn: the mutation test checks no concurrency, and under the race
// detector each load is several times slower: it tries fewer files there.
const raceOn = true
