package serverless

// EnvFaultKill arms the kill test's fault (builds with the
// agentslice_faults tag only; the deployed bootstrap has no such code):
// "<crash point>,<thread ID>,<marker file>", several separated by ";". The
// first slice of that thread to reach that crash point creates the marker
// file and SIGKILLs its own process, as a Lambda environment dies
// mid-slice; once the marker exists (the restarted process, redeliveries)
// nothing is killed again.
const EnvFaultKill = "AGENTSLICE_FAULT_KILL"
