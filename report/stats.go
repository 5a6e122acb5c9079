package report

import (
	"container/heap"
	"math"
)

// colStats follows one numeric column row by row: count, min, max and the
// running median (two heaps), so that a table of 20,000 rows costs the
// same to summarise at every write as one of 20.
type colStats struct {
	count      int
	min, max   float64
	lo         maxHeap // the lower half
	hi         minHeap // the upper half
	pass, fail int     // checks against an expectation
}

func (c *colStats) add(v float64) {
	if math.IsNaN(v) {
		return
	}
	if c.count == 0 || v < c.min {
		c.min = v
	}
	if c.count == 0 || v > c.max {
		c.max = v
	}
	c.count++
	if c.lo.Len() == 0 || v <= c.lo.floats[0] {
		heap.Push(&c.lo, v)
	} else {
		heap.Push(&c.hi, v)
	}
	switch {
	case c.lo.Len() > c.hi.Len()+1:
		heap.Push(&c.hi, heap.Pop(&c.lo))
	case c.hi.Len() > c.lo.Len():
		heap.Push(&c.lo, heap.Pop(&c.hi))
	}
}

func (c *colStats) median() float64 {
	switch {
	case c.lo.Len() == 0:
		return math.NaN()
	case c.lo.Len() > c.hi.Len():
		return c.lo.floats[0]
	}
	return (c.lo.floats[0] + c.hi.floats[0]) / 2
}

type floats []float64

func (h floats) Len() int           { return len(h) }
func (h floats) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *floats) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *floats) Pop() any          { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }
func (h floats) less(i, j int) bool { return h[i] < h[j] }

type minHeap struct{ floats }

func (h minHeap) Less(i, j int) bool { return h.floats.less(i, j) }
func (h *minHeap) Push(x any)        { h.floats.Push(x) }
func (h *minHeap) Pop() any          { return h.floats.Pop() }

type maxHeap struct{ floats }

func (h maxHeap) Less(i, j int) bool { return h.floats.less(j, i) }
func (h *maxHeap) Push(x any)        { h.floats.Push(x) }
func (h *maxHeap) Pop() any          { return h.floats.Pop() }
