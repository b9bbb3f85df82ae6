package e2e

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/cmd/airlock/internal/browsertest"
	"github.com/airlock/airlock/executors/testkit"
)

// opfsReader is what a process that binds the broker's port once it has
// stopped serves there: first-party for the view page's origin, it reads
// every file of that origin's private file system and both of its
// storages, and writes them to #results as JSON (bytes as Latin-1 text).
const opfsReader = `<!doctype html><pre id="results">running</pre><script>
(async () => {
  const files = [];
  async function walk(dir, path) {
    for await (const [name, h] of dir.entries()) {
      if (h.kind === "directory") { files.push({ path: path + name + "/" }); await walk(h, path + name + "/"); continue; }
      const b = new Uint8Array(await (await h.getFile()).arrayBuffer());
      files.push({ path: path + name, size: b.length, bytes: Array.from(b, (c) => String.fromCharCode(c)).join("") });
    }
  }
  try {
    await walk(await navigator.storage.getDirectory(), "/");
    const storages = JSON.stringify({ session: { ...sessionStorage }, local: { ...localStorage } });
    document.getElementById("results").textContent = JSON.stringify({ files, storages });
  } catch (e) {
    document.getElementById("results").textContent = "failed " + e;
  }
})();
</script>`

// TestBrowserStoredNotesSealedAtRest: a note the view page stores in OPFS
// is sealed with the broker's key. Once the broker stops, a page another
// process serves on the same port (so on the same origin) finds files but
// neither the note's text nor its name, nor the key in the origin's
// storages; a broker started again on the same data directory opens the
// note again.
func TestBrowserStoredNotesSealedAtRest(t *testing.T) {
	data := t.TempDir()
	serve := func(listen string) *proc {
		return startServe(t, procOptions{Args: []string{"--no-builtin", "--listen", listen, "--data", data},
			Env: []string{"TENSORVIZ_LOCAL_TOKEN=" + sessionToken}, Secrets: []string{sessionToken}})
	}
	p := serve("127.0.0.1:0")
	b := browsertest.Start(t).First()
	openTools(t, b, p.mintFor(t, localclient.MintOptions{}), p.URL())
	const name, marker = "plans-for-the-squatter.md", "the-squatter-must-not-read-this-line"
	b.Do(chromedp.SetUploadFiles(chromedp.CSS("#pick"), []string{writeNote(t, t.TempDir(), name, "# Plans\n"+marker+"\n")}))
	b.WaitFor("the picked note", notesOf("picked"), "1")
	b.Click("#store-picked")
	b.WaitFor("the note stored", notesOf("stored"), "1")

	p.Stop()
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatalf("bind the stopped broker's port: %v", err)
	}
	squatter := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, opfsReader)
	}))
	squatter.Listener = ln
	squatter.Start()
	b.Navigate("http://" + p.Addr + "/")
	testkit.Eventually(t, "the squatter's read of OPFS", func() bool { return b.Eval(text("#results")) != "running" })
	raw := b.Eval(text("#results"))
	squatter.Close()
	var got struct {
		Files []struct {
			Path  string
			Size  int
			Bytes string
		}
		Storages string
	}
	if err := jsonUnmarshal(raw, &got); err != nil {
		t.Fatalf("the squatter's page: %s", raw)
	}
	stored := 0
	for _, f := range got.Files {
		t.Logf("the squatter found %s (%d bytes)", f.Path, f.Size)
		if strings.Contains(f.Path, name) || strings.Contains(f.Bytes, marker) || strings.Contains(f.Bytes, name) {
			t.Errorf("the squatter read the note in %s", f.Path)
		}
		if f.Size > 0 {
			stored++
		}
	}
	if stored == 0 {
		t.Fatal("the squatter found no stored file at all: it read the wrong storage")
	}

	// The key is the broker's, 0600 in its data directory, and in none of
	// the origin's storages.
	keyFile := filepath.Join(data, ".view-storage.key")
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	keyText := base64.RawURLEncoding.EncodeToString(key)
	p.AddSecret(keyText)
	fi, err := os.Stat(keyFile)
	if err != nil || len(key) != 32 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the storage key file holds %d bytes (%v); want 32, mode 0600", len(key), err)
	}
	for _, f := range got.Files {
		if strings.Contains(f.Bytes, keyText) || strings.Contains(f.Bytes, string(key)) {
			t.Errorf("the storage key is stored in %s", f.Path)
		}
	}
	if strings.Contains(got.Storages, keyText) {
		t.Error("the storage key is in the origin's sessionStorage or localStorage")
	}

	p2 := serve(p.Addr)
	b.Navigate("about:blank")
	openTools(t, b, p2.mintFor(t, localclient.MintOptions{}), p2.URL())
	b.WaitFor("the note opened again", text(`#notes-list li[data-source="stored"] .code`), name)
	b.Click("#serve")
	b.WaitFor("serving", servingState, "serving")
	testkit.Eventually(t, "page-notes to be listed", func() bool { return pageTools(t, p2)["page-notes"].Executor == "page" })
	if code, out := callPage(t, p2, "read_notes", `{"path":"`+name+`"}`); code != 0 || !strings.Contains(out, marker) {
		t.Errorf("read_notes of the sealed note after a restart: exit %d %s", code, out)
	}
}
