//go:build chaos

package chaos_test

// fullChaos: built with the chaos tag, TestChaosFull runs every site.
const fullChaos = true
