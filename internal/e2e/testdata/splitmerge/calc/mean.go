// Package calc summarises samples of numbers.
package calc

// Mean returns the arithmetic mean of xs, or 0 when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for i := 1; i < len(xs); i++ {
		sum += xs[i]
	}
	return sum / float64(len(xs))
}
