package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentslice/agentslice/internal/cost"
)

// runCost prints what a workload costs on the AWS deployment (docs/cost.md):
// the model in internal/cost, fed by flags, a workload file, a prices file
// and the load tests' measured results.
func runCost(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	w := cost.DefaultWorkload()
	src := cost.DefaultSources(&w)
	// Flags write into a copy; those set on the command line are applied
	// last, over the files.
	flagged := w
	for _, f := range flagged.Fields() {
		fs.Float64Var(f.V, strings.ReplaceAll(f.Name, "_", "-"), *f.V, f.Usage)
	}
	workloadFile := fs.String("workload", "", "JSON `file` of workload fields (the flags' names with underscores); flags override it")
	pricesFile := fs.String("prices", "", "JSON `file` of unit prices overlaying the built-in table (docs/cost.md)")
	storageFile := fs.String("storage-result", "", "storage load test result `file` (loadtest/results/storage.json): checked against the model, its round trips used")
	densityFile := fs.String("density-result", "", "density benchmark result `file` (loadtest/results/density-*.json): bytes per waiting agent, history bytes per turn")
	printPrices := fs.Bool("print-prices", false, "print the built-in price table as JSON (a starting point for -prices) and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentslice cost [flags]\n\nWhat a workload costs on the AWS deployment, per component, per 1,000 turns,\nper idle agent per month, and against keeping the agents in memory always on.\n"+cost.PricesNote+".\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (every input is a flag)", fs.Arg(0))
	}
	if *printPrices {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(cost.DefaultPrices())
	}
	open := func(name string, read func(io.Reader) error) error {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		return read(f)
	}
	if *workloadFile != "" {
		if err := open(*workloadFile, func(r io.Reader) error {
			return cost.DecodeWorkload(r, "file "+*workloadFile, &w, src)
		}); err != nil {
			return err
		}
	}
	if *storageFile != "" {
		if err := open(*storageFile, func(r io.Reader) error {
			m, err := cost.ReadStorage(r, *storageFile)
			if err != nil {
				return err
			}
			return cost.ApplyStorage(&w, src, m, *storageFile)
		}); err != nil {
			return err
		}
	}
	if *densityFile != "" {
		if err := open(*densityFile, func(r io.Reader) error {
			m, err := cost.ReadDensity(r, *densityFile)
			if err == nil {
				cost.ApplyDensity(&w, src, m, *densityFile)
			}
			return err
		}); err != nil {
			return err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[strings.ReplaceAll(f.Name, "-", "_")] = true })
	from, to := flagged.Fields(), w.Fields()
	for i := range from {
		if set[from[i].Name] {
			*to[i].V = *from[i].V
			src[from[i].Name] = "flag -" + strings.ReplaceAll(from[i].Name, "_", "-")
		}
	}
	prices := cost.DefaultPrices()
	if *pricesFile != "" {
		if err := open(*pricesFile, func(r io.Reader) (err error) {
			prices, err = cost.LoadPrices(r, "file "+*pricesFile)
			return err
		}); err != nil {
			return err
		}
	}
	rep, err := cost.Estimate(w, src, prices)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "cost: "))
	}
	rep.Print(stdout)
	return nil
}
