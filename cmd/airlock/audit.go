package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/receipts"
)

func init() { register(newAuditCmd) }

// newAuditCmd is `airlock audit verify [FILE…] | tail [-n N] [--json]`, on
// the receipt log of --data (or audit.dir).
func newAuditCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "audit",
		Short: "check and read the receipt log: audit verify [FILE…] | audit tail [-n N]",
		Long: "The broker writes a receipt of every tool call and admission event to\n" +
			"receipts.jsonl in the data directory (audit.dir), each chained to the one before.\n" +
			"`audit verify` checks the chain; `audit tail` prints the last receipts.",
	}
	groupCommand(c)
	c.AddCommand(auditVerify(), auditTail())
	return c
}

// auditFiles is the files named, or the receipt files of the log's
// folder in chain order.
func auditFiles(sf *settingsFlags, args []string) ([]string, error) {
	if len(args) > 0 {
		for _, a := range args {
			if err := checkPath("FILE", a, file); err != nil {
				return nil, err
			}
		}
		return args, nil
	}
	cfg, err := sf.load()
	if err != nil {
		return nil, err
	}
	files, err := receipts.Files(cfg.AuditDir())
	if err != nil {
		return nil, configErr(err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no receipt files in %s", cfg.AuditDir())
	}
	return files, nil
}

func auditVerify() *cobra.Command {
	var sf *settingsFlags
	c := &cobra.Command{
		Use:   "verify [FILE…]",
		Short: "check the receipt chain; name the first broken, missing or reordered record",
		Long: "Checks that every record continues the chain (seq one past the last, prev the\n" +
			"SHA-256 of the last record's line), across the rotated files and receipts.jsonl of\n" +
			"--data in order, or across the FILEs given, in that order. A torn final line (a\n" +
			"crash mid-write) is noted and accepted. Exit 0 when the chain holds, 3 when a record\n" +
			"breaks it (named by file and line), 1 when there is nothing to verify.",
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := auditFiles(sf, args)
			if err != nil {
				return err
			}
			rep, err := receipts.Verify(files)
			var broken *receipts.Broken
			if errors.As(err, &broken) {
				fmt.Fprintf(cmd.ErrOrStderr(), "airlock audit verify: %v\n", broken)
				return exitSilently(exitRefused)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if rep.Torn != "" {
				fmt.Fprintf(out, "note: %s\n", rep.Torn)
			}
			fmt.Fprintf(out, "ok: %d records in %d files, last seq %d, head %s\n", rep.Records, rep.Files, rep.Last, rep.Head)
			return nil
		},
	}
	sf = addSettingsFlags(c.Flags(), "data")
	return c
}

func auditTail() *cobra.Command {
	var sf *settingsFlags
	var n int
	var asJSON bool
	c := &cobra.Command{
		Use:   "tail",
		Short: "print the last receipts, one line each (--json: the records as written)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 {
				return usageErr("-n: must be at least 1")
			}
			files, err := auditFiles(sf, nil)
			if err != nil {
				return err
			}
			lines, err := receipts.Tail(files, n)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, line := range lines {
				if asJSON {
					fmt.Fprintf(out, "%s\n", line)
					continue
				}
				var r receipts.Record
				if err := json.Unmarshal(line, &r); err != nil {
					fmt.Fprintf(out, "(not a record: %d bytes)\n", len(line))
					continue
				}
				fmt.Fprintln(out, r.Human())
			}
			return nil
		},
	}
	sf = addSettingsFlags(c.Flags(), "data")
	c.Flags().IntVarP(&n, "lines", "n", 10, "how many receipts to print")
	c.Flags().BoolVar(&asJSON, "json", false, "print the records as written (JSON Lines)")
	return c
}
