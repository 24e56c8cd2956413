package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// The jail: where Debian's bubblewrap (bwrap) works, run_command's
// commands run inside it. What a jailed command sees:
//   - the whole file system read-only (--ro-bind / /), with a fresh /dev
//     and /proc;
//   - a private, empty /tmp (--tmpfs /tmp), with the repository's git
//     directory bound back read-only when it lives under /tmp (a
//     sandbox's .git file points there, so git works in the jail);
//   - what a git commit on the sandbox's own branch writes: its own
//     object store, its worktree's git directory, the sandboxes' refs
//     and reflogs (gitjail.go);
//   - its sandbox directory writable, and a cache directory shared by the
//     sandboxes of the repository (XDG_CACHE_HOME, so a Go build cache
//     works), also writable;
//   - no network (--unshare-net) unless the command was allowed it, and
//     no other writable directory unless the command was allowed one
//     (permission.go);
//   - its own PID namespace (--unshare-pid), ended with the process group
//     when the command is killed (--die-with-parent as well).
//
// Where bwrap is missing or cannot make namespaces (unprivileged user
// namespaces turned off, a container without the capability), ProbeJail
// says why and commands run unjailed, as the server's user, in the sandbox
// directory; the file tools' path checks still hold, but a command could
// write elsewhere.

// JailMode says whether commands are jailed.
type JailMode string

// Jail modes of Config.Jail.
const (
	// JailAuto jails when ProbeJail succeeds, else runs unjailed (the
	// default; the server logs which).
	JailAuto JailMode = "auto"
	// JailOn requires the jail: NewManager fails when it does not work.
	JailOn JailMode = "on"
	// JailOff never jails.
	JailOff JailMode = "off"
)

// ProbeJail checks that bwrap is on PATH and can make the namespaces the
// jail uses, by running `true` inside one. It returns bwrap's path, or an
// error saying what failed (bwrap's own message included).
func ProbeJail(ctx context.Context) (string, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("bwrap (Debian's bubblewrap package) is not on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append(jailArgs("/", "", "", jailGit{}, jailGrant{}), "true")
	cmd := exec.CommandContext(ctx, bwrap, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s cannot make a jail here (%v: %s); unprivileged user namespaces may be turned off (sysctl kernel.unprivileged_userns_clone, or the container lacks the capability)",
			bwrap, err, strings.TrimSpace(out.String()))
	}
	return bwrap, nil
}

// jailArgs returns bwrap's arguments up to the command: the system
// read-only, a private /tmp (gitDir, when set, bound back read-only),
// dir, cache, what a commit on the sandbox's branch writes (gw) and the
// granted directories writable, the network cut unless granted.
func jailArgs(dir, cache, gitDir string, gw jailGit, g jailGrant) []string {
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"}
	if !g.Network {
		args = append(args, "--unshare-net")
	}
	for _, w := range g.Write {
		args = append(args, "--bind", w, w)
	}
	// Binds come after the tmpfs, so a sandbox under /tmp stays visible.
	if gitDir != "" {
		args = append(args, "--ro-bind", gitDir, gitDir)
	}
	// ... and the parts of it a commit writes come after that.
	if gw.Store != "" {
		args = append(args, "--bind", gw.Store, gw.Store)
	}
	for _, w := range gw.Write {
		args = append(args, "--bind", w, w)
	}
	if cache != "" {
		args = append(args, "--bind", cache, cache)
	}
	if dir != "/" {
		args = append(args, "--bind", dir, dir)
	}
	return append(args, "--chdir", dir, "--")
}
