//go:build mutants

package runtime

import (
	"fmt"
	"os"
)

// chaosmutant is the mutant this test binary plants, from
// AGENTSLICE_MUTANT (see Mutants).
var chaosmutant = Mutant(os.Getenv("AGENTSLICE_MUTANT"))

func init() {
	if !knownMutant(chaosmutant) {
		panic(fmt.Sprintf("AGENTSLICE_MUTANT=%q names no mutant; known: %v", chaosmutant, Mutants))
	}
}

func knownMutant(m Mutant) bool {
	for _, k := range Mutants {
		if k == m {
			return true
		}
	}
	return m == ""
}
