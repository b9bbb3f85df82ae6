package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
)

// unboundedFiles are the files that must never be read whole: a link to
// /dev/zero (endless), a pipe (a read waits for a writer forever) and a
// regular file one byte over the 1 MiB bound. Each func makes one at path
// and returns how the refusal describes it.
var unboundedFiles = map[string]func(t *testing.T, path string) string{
	"link to /dev/zero": func(t *testing.T, path string) string {
		must(t, os.Symlink("/dev/zero", path))
		return "is a symbolic link; put the file itself there"
	},
	"pipe": func(t *testing.T, path string) string {
		must(t, syscall.Mkfifo(path, 0o644))
		return "is not a regular file (a pipe); put a file there"
	},
	"over 1 MiB": func(t *testing.T, path string) string {
		must(t, os.WriteFile(path, []byte("{"+strings.Repeat(" ", 1<<20)+"}"), 0o644))
		return "is over 1048576 bytes, the most read; make it smaller"
	},
}

// TestUnboundedPluginJSONIsRefusedByName: a plugin.json that is a link to
// /dev/zero, a pipe or over 1 MiB is refused by every command that meets
// it, naming the file and the fix, with a non-zero exit and within the
// command's own deadline (without the checks, build and run read
// /dev/zero until memory runs out and wait on the pipe forever).
func TestUnboundedPluginJSONIsRefusedByName(t *testing.T) {
	t.Parallel()
	for kind, mk := range unboundedFiles {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			project := t.TempDir()
			plugin := filepath.Join(project, "plugin.json")
			why := mk(t, plugin)
			folder := t.TempDir()
			must(t, os.Mkdir(filepath.Join(folder, "greet"), 0o755))
			inFolder := filepath.Join(folder, "greet", "plugin.json")
			mk(t, inFolder)
			for _, c := range []struct {
				args []string
				exit int
				want string
			}{
				{[]string{"build", project}, exitcode.Refused, "airlock build: descriptor-invalid: " + plugin + " " + why},
				{[]string{"run", project, "greet"}, exitcode.Refused, "airlock run: descriptor-invalid: " + plugin + " " + why},
				{[]string{"tools", "--plugins", folder}, exitcode.Refused, "greet/plugin.json " + why},
				// new writes a project and never reads one: the folder is
				// refused for not being empty.
				{[]string{"new", "greet", "--dir", project}, exitcode.Usage, "airlock new: " + project + " exists and is not empty"},
			} {
				code, stdout, stderr := runCLIWithin(t, refusalDeadline, nil, c.args...)
				if code != c.exit || !strings.Contains(stdout+stderr, c.want) {
					t.Errorf("airlock %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s",
						strings.Join(c.args, " "), code, c.exit, c.want, tail(stdout, 2000), tail(stderr, 2000))
				}
			}
		})
	}
}

// TestUnboundedConfigFileIsRefusedByName: a --config file that is a link
// to /dev/zero, a pipe or over 1 MiB is refused by name by every command
// that reads settings, as a configuration error (exit 2), within the
// command's own deadline.
func TestUnboundedConfigFileIsRefusedByName(t *testing.T) {
	t.Parallel()
	for kind, mk := range unboundedFiles {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "airlock.yaml")
			why := mk(t, file)
			project := t.TempDir()
			for _, args := range [][]string{
				{"serve", "--listen", "127.0.0.1:0"},
				{"env", "--broker", "ws://127.0.0.1:1/channel"},
				{"tools", "--plugins", t.TempDir()},
				{"build", project},
				{"run", project, "greet"},
			} {
				args = append(args, "--config", file, "--data", t.TempDir())
				code, stdout, stderr := runCLIWithin(t, refusalDeadline, tokenEnv(), args...)
				want := "config: " + file + " " + why
				if code != exitcode.Usage || !strings.Contains(stderr, want) {
					t.Errorf("airlock %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s",
						strings.Join(args, " "), code, exitcode.Usage, want, tail(stdout, 2000), tail(stderr, 2000))
				}
			}
		})
	}
}
