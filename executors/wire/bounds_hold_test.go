package wire

import "testing"

func TestOutputFits(t *testing.T) {
	b := Bounds{MaxOutputBytes: 10}
	for obs, want := range map[string]bool{`{}`: true, `{"a":"12"}`: true, `{"a":"123"}`: false} {
		if got := b.OutputFits([]byte(obs)); got != want {
			t.Errorf("OutputFits(%s) = %v, want %v", obs, got, want)
		}
	}
}

func TestBudgetAgrees(t *testing.T) {
	b := Bounds{MaxRequests: 3}
	cases := []struct {
		g    *Budget
		want bool
	}{
		{nil, true},
		{&Budget{RequestsUsed: 0, RequestsLimit: 3}, true},
		{&Budget{RequestsUsed: 3, RequestsLimit: 3}, true},
		{&Budget{RequestsUsed: 4, RequestsLimit: 3}, false},
		{&Budget{RequestsUsed: 0, RequestsLimit: 0}, false},
		{&Budget{RequestsUsed: 999, RequestsLimit: 999}, false},
	}
	for _, c := range cases {
		if got := b.BudgetAgrees(c.g); got != c.want {
			t.Errorf("BudgetAgrees(%+v) = %v, want %v", c.g, got, c.want)
		}
	}
	if (Bounds{}).BudgetAgrees(&Budget{RequestsUsed: 999, RequestsLimit: 0}) {
		t.Error("{999, 0} agrees with maxRequests 0")
	}
}
