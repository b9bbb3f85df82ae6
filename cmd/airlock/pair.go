package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/airlock/airlock/broker/pairing"
)

// runPair is `airlock pair add NAME | ls | rm NAME`, on the pairings file
// of --data. `add` prints the new bearer alone on stdout, once; nothing
// else ever shows it.
func runPair(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: airlock pair add NAME | airlock pair ls | airlock pair rm NAME   [--data DIR]")
		fmt.Fprintln(stderr, "add prints the new bearer once, alone on stdout; give it to `airlock env` (AIRLOCK_BEARER or --bearer-file)")
	}
	if len(args) == 0 || (args[0] != "add" && args[0] != "ls" && args[0] != "rm") {
		usage()
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return exitOK
		}
		return exitUsage
	}
	sub := args[0]
	fs := newFlags("pair "+sub, stderr)
	sf := addSettingsFlags(fs, "data")
	fs.Usage = func() { usage(); fs.PrintDefaults() }
	names, code := parseInterleaved(fs, args[1:])
	if code >= 0 {
		return code
	}
	want := map[string]int{"add": 1, "ls": 0, "rm": 1}[sub]
	if len(names) != want {
		usage()
		return exitUsage
	}
	cfg, err := sf.load()
	if err != nil {
		fmt.Fprintf(stderr, "airlock pair: %v\n", err)
		return exitUsage
	}
	if code := checkData("pair", cfg, false, stderr); code >= 0 {
		return code
	}
	switch sub {
	case "add":
		return pairAdd(cfg.Data, names[0], stdout, stderr)
	case "rm":
		if err := pairing.Remove(cfg.Data, names[0]); err != nil {
			return fail(stderr, "pair rm: %v", err)
		}
		fmt.Fprintf(stderr, "airlock pair: %s revoked; a broker watching %s closes its connection\n", names[0], cfg.Data)
		return exitOK
	}
	return pairList(cfg.Data, stdout, stderr)
}

func pairAdd(data, name string, stdout, stderr io.Writer) int {
	bearer, err := pairing.Add(data, name, time.Now())
	if err != nil {
		return fail(stderr, "pair add: %v", err)
	}
	fmt.Fprintln(stdout, bearer)
	fmt.Fprintf(stderr, "airlock pair: %s paired; the bearer above is shown once and stored nowhere\n", name)
	return exitOK
}

// pairList prints one line per pairing: its name and when it was made.
func pairList(data string, stdout, stderr io.Writer) int {
	ps, err := pairing.List(data)
	if err != nil {
		return fail(stderr, "pair ls: %v", err)
	}
	for _, p := range ps {
		fmt.Fprintf(stdout, "%s\t%s\n", p.Name, p.Created)
	}
	return exitOK
}

// parseInterleaved parses flags wherever they appear among positional
// arguments (`pair add NAME --data DIR` and `pair add --data DIR NAME`)
// and returns the positionals. The exit code is -1 to go on.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, int) {
	var pos []string
	for {
		if code := parseFlags(fs, args); code >= 0 {
			return nil, code
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, -1
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), -1
		}
		if strings.HasPrefix(args[0], "-") {
			return append(pos, args...), -1
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
