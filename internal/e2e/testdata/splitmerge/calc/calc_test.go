package calc

import "testing"

func TestMean(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{2, 4, 6}, 4},
	} {
		if got := Mean(c.in); got != c.want {
			t.Errorf("Mean(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestMax(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{2, 6, 4}, 6},
	} {
		if got := Max(c.in); got != c.want {
			t.Errorf("Max(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
