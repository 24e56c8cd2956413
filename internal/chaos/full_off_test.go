//go:build !chaos

package chaos_test

// fullChaos: without the chaos tag, TestChaosFull runs a seeded sample.
const fullChaos = false
