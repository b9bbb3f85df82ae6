package httpx

import "testing"

// TestForeignOrigin: only an origin a browser could send, for a host that
// cannot be this machine, is foreign; every page of this machine and
// every value no browser writes is not.
func TestForeignOrigin(t *testing.T) {
	for o, want := range map[string]bool{
		"https://ide.example": true, "http://10.0.0.5:3000": true, "https://sub.example.com:8443": true,
		"http://[2001:db8::1]:8080": true, "http://192.168.1.5": true, "http://localhost.evil.example": true,
		"https://xn--bcher-kva.example": true,
		// This machine, under every name a browser resolves to it.
		"http://127.0.0.1:1": false, "http://localhost:1": false, "http://[::1]:1": false,
		"http://127.0.0.2:1": false, "http://app.localhost:1": false, "http://localhost.:1": false,
		"http://0.0.0.0:1": false, "http://[::]:1": false, "http://[::ffff:127.0.0.1]:1": false,
		"http://127.0.0.1.:1": false, "https://127.0.0.1": false,
		// Other schemes and null: extensions, webviews, sandboxed and file pages.
		"null": false, "vscode-webview://0a1b2c": false, "chrome-extension://abc": false, "file://": false,
		// Not what a browser writes.
		"": false, "ide.example": false, "https://ide.example/": false, "https://IDE.example": false,
		"https://ide.example:443": false, "http://ide.example:80": false, "https://u@ide.example": false,
		"https://ide.example/x": false, "https://ide.example?": false, "https://ide.example#": false,
		"http://127.1:1": false, "http://2130706433:1": false, "http://0x7f.1:1": false, "http://1.2.3.4.5": false,
		"https://ide.example:": false, "https://ide.example:0": false, " https://ide.example": false,
		"https://exämple.com": false, "https://ide.example%2f": false, "ws://ide.example": false,
	} {
		if ForeignOrigin(o) != want {
			t.Errorf("ForeignOrigin(%q) != %v", o, want)
		}
	}
}
