//go:build !mutants

package runtime

// chaosmutant is the planted mutant: none, and a constant, so every
// mutant check in the engine is dead code the compiler removes.
const chaosmutant Mutant = ""
