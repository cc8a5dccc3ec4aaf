// Package parallelpanic has parallel tests waiting while a sequential one panics.
package parallelpanic

// Divide divides a by b.
func Divide(a, b int) int { return a / b }
