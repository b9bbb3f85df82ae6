package contract

import "testing"

func TestViewCookieName(t *testing.T) {
	got := ViewCookieName("http://127.0.0.1:5173")
	if len(got) != len("tensorviz_local_browser_")+16 || got[:24] != "tensorviz_local_browser_" {
		t.Fatalf("cookie name %q", got)
	}
	if got == ViewCookieName("http://127.0.0.1:5174") {
		t.Fatal("different origins share a cookie name")
	}
	// echo -n http://127.0.0.1:5173 | sha256sum | cut -c1-16
	if want := "tensorviz_local_browser_04f38fc06ceea50a"; got != want {
		t.Fatalf("cookie name %q, want %q", got, want)
	}
}
