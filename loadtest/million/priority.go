package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// renice sets the nice value of every thread of process pid (Linux keeps
// one per thread; threads started later inherit their creator's). A
// negative value needs root or CAP_SYS_NICE. -serve-nice uses it to give
// serve a larger share of a shared machine's cores than the other
// processes, so that the wake-up's figures separate what the machine's
// load costs from what serve's own path does.
func renice(pid, nice int) error {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("setpriority(thread %d of serve, %d): %w", tid, nice, err)
		}
	}
	return nil
}
