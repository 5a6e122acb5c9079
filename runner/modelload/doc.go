// Package modelload measures a model load: how much of the model's files
// the page cache holds when a server starts (cold, warm or partly warm),
// the stages of the load from the server's own timing lines, and a
// prewarm that reads the folder into the page cache before the server
// starts. It imports nothing of greenlight's.
package modelload
