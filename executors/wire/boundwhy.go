package wire

import "fmt"

// The whys of refusals a bound decides. Each names the bound by its key
// in plugin.json, in that key's unit, with the descriptor's value and,
// where the executor knows it, the value the call reached: what a user
// reads to decide which setting to change and by how much. None quotes
// args; UnknownToolWhy quotes the tool name the caller sent, which is an
// id, not a secret. broker/jsclient/src/executor.ts builds the same texts
// for page executors.

// maxNameInWhy bounds a caller's tool name quoted in a why; a declared
// tool name is at most 64 bytes.
const maxNameInWhy = 64

// OutputWhy is output-too-large's why: the compact observation was size
// bytes, over maxOutputBytes. size is 0 when it is not known because
// reading stopped at the bound.
func OutputWhy(size, maxOutputBytes int) string {
	if size <= 0 {
		return fmt.Sprintf("the tool's output was more than %d bytes (bounds.maxOutputBytes)", maxOutputBytes)
	}
	return fmt.Sprintf("the tool's output was %d bytes, over bounds.maxOutputBytes %d", size, maxOutputBytes)
}

// TimeoutWhy is exec-timeout's why: the call ran for timeoutMs and was
// stopped.
func TimeoutWhy(timeoutMs int) string {
	return fmt.Sprintf("the tool ran past bounds.timeoutMs %d ms", timeoutMs)
}

// CompilingWhy is exec-timeout's why for a call that waited for its
// module's compilation (a broker lists tools while they compile) until
// timeoutMs ran out: the tool never ran, and the next call may find the
// module ready.
func CompilingWhy(timeoutMs int) string {
	return fmt.Sprintf("the tool's module was still compiling when bounds.timeoutMs %d ms ran out", timeoutMs)
}

// MemoryWhy is memory-exhausted's why: the tool asked for a linear
// memory of asked bytes (rounded up to MiB), over memoryMiB; asked is 0
// when not known.
func MemoryWhy(asked uint64, memoryMiB int) string {
	if asked == 0 {
		return fmt.Sprintf("the tool needed more memory than bounds.memoryMiB %d", memoryMiB)
	}
	return fmt.Sprintf("the tool asked for %d MiB of memory, over bounds.memoryMiB %d", (asked+1<<20-1)>>20, memoryMiB)
}

// BudgetWhy is budget-exhausted's why: the call had made maxRequests
// fetches and started one more.
func BudgetWhy(maxRequests int) string {
	return fmt.Sprintf("the tool tried fetch %d, over bounds.maxRequests %d", maxRequests+1, maxRequests)
}

// UnknownToolWhy is unknown-tool's why: the tool asked for, cleaned and
// cut, and the descriptor that does not declare it.
func UnknownToolWhy(tool, descriptorID string) string {
	return fmt.Sprintf("the descriptor \"%s\" declares no tool \"%s\"", descriptorID, CleanWhy(tool, maxNameInWhy))
}
