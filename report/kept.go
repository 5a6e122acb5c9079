package report

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/greenlight-run/greenlight/internal/files"
)

// keptMap is what a writer fixes once and keeps in the state dir for
// `greenlight report`, by key (a finished step's stamp, its power, a
// finished phase's GPU summary): read at the writer's start, written
// back atomically after a write that changed it. One type, three files.
type keptMap[V any] struct {
	path  string // "" keeps nothing (no state dir)
	m     map[string]V
	dirty bool
}

func openKept[V any](stateDir, name string) *keptMap[V] {
	k := &keptMap[V]{m: map[string]V{}}
	if stateDir == "" {
		return k
	}
	k.path = filepath.Join(stateDir, name)
	if b, err := os.ReadFile(k.path); err == nil {
		json.Unmarshal(b, &k.m)
	}
	return k
}

func (k *keptMap[V]) get(key string) (V, bool) {
	v, ok := k.m[key]
	return v, ok
}

func (k *keptMap[V]) set(key string, v V) { k.m[key], k.dirty = v, true }

func (k *keptMap[V]) drop(key string) {
	if _, ok := k.m[key]; ok {
		delete(k.m, key)
		k.dirty = true
	}
}

// save writes the map back if it changed. Best effort: on failure it
// stays dirty and the next write tries again.
func (k *keptMap[V]) save() {
	if !k.dirty || k.path == "" {
		return
	}
	if b, err := json.Marshal(k.m); err == nil && files.WriteAtomic(k.path, b) == nil {
		k.dirty = false
	}
}
