package lambdatest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// RIE runs one function's bootstrap under the AWS Lambda Runtime Interface
// Emulator (aws-lambda-rie) on 127.0.0.1. The emulator runs one invocation
// at a time; Invoke serialises callers. The bootstrap starts (its init runs)
// on the first invocation, as in Lambda.
type RIE struct {
	// Binary is the aws-lambda-rie executable; Bootstrap the function's.
	Binary, Bootstrap string
	// Env is the function's environment (NAME=value), passed through the
	// emulator. AWS_LAMBDA_FUNCTION_TIMEOUT sets the invocation deadline.
	Env []string
	// Lines gets every line the emulator and the function print.
	Lines func(line string)

	cmd    *exec.Cmd
	addr   string
	client *http.Client
	mu     sync.Mutex // one invocation at a time
	waited chan struct{}
	outWG  sync.WaitGroup
}

// freePort returns a port that was free a moment ago on 127.0.0.1.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start launches the emulator and waits (up to 20 s) until it accepts
// connections.
func (r *RIE) Start(ctx context.Context) error {
	api, err := freePort()
	if err != nil {
		return err
	}
	r.addr, err = freePort()
	if err != nil {
		return err
	}
	boot, err := filepath.Abs(r.Bootstrap)
	if err != nil {
		return err
	}
	r.cmd = exec.Command(r.Binary, "--runtime-interface-emulator-address", r.addr, "--runtime-api-address", api, boot)
	r.cmd.Dir = filepath.Dir(boot)
	r.cmd.Env = r.Env
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Stop ends the bootstrap too
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	r.cmd.Stderr = r.cmd.Stdout
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("lambdatest: starting %s: %w", r.Binary, err)
	}
	r.waited = make(chan struct{})
	r.outWG.Add(1)
	go func() {
		defer r.outWG.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if r.Lines != nil {
				r.Lines(sc.Text())
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		r.outWG.Wait()
		_ = r.cmd.Wait()
		close(r.waited)
	}()
	r.client = &http.Client{Timeout: 5 * time.Minute}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-r.waited:
			return fmt.Errorf("lambdatest: %s exited during start-up", r.Binary)
		case <-ctx.Done():
			r.Stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop()
			return fmt.Errorf("lambdatest: %s did not listen on %s within 20 s", r.Binary, r.addr)
		}
	}
}

// FunctionError is an invocation that ended with the handler's error (the
// emulator answers it with status 200 and an error document).
type FunctionError struct {
	Status int
	Body   string
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function error (HTTP %d): %.1000s", e.Status, e.Body)
}

// Invoke sends payload to the function and returns its response. A
// handler error, an init failure or a timeout is a *FunctionError.
func (r *RIE) Invoke(ctx context.Context, payload any) ([]byte, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+"/2015-03-31/functions/function/invocations", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lambdatest: invoking %s: %w", filepath.Base(filepath.Dir(r.Bootstrap)), err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || isErrorDoc(out) {
		return nil, &FunctionError{Status: resp.StatusCode, Body: string(out)}
	}
	return out, nil
}

// isErrorDoc reports whether b is the error document of a failed
// invocation ({"errorMessage": ..., "errorType": ...}) or the emulator's
// timeout text.
func isErrorDoc(b []byte) bool {
	if strings.HasPrefix(string(b), "Task timed out") {
		return true
	}
	var doc struct {
		ErrorMessage *string `json:"errorMessage"`
		ErrorType    *string `json:"errorType"`
	}
	return json.Unmarshal(b, &doc) == nil && (doc.ErrorMessage != nil || doc.ErrorType != nil)
}

// InvokeSQS invokes the function with an SQS event (an InvokeFunc).
func (r *RIE) InvokeSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	out, err := r.Invoke(ctx, ev)
	if err != nil {
		return resp, err
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return resp, fmt.Errorf("lambdatest: the response is not an SQSEventResponse: %w: %.500s", err, out)
	}
	return resp, nil
}

// Stop ends the emulator and the bootstrap and waits for them. It is safe
// to call twice.
func (r *RIE) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.waited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.waited
	}
}

// Env returns os.Environ() without any AWS_* or AGENTSLICE_* variable, plus
// extra: the base environment of a function under test.
func Env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "AGENTSLICE_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// InvokeFunctionURL invokes the function with a Function URL request.
func (r *RIE) InvokeFunctionURL(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	var resp events.LambdaFunctionURLResponse
	out, err := r.Invoke(ctx, req)
	if err != nil {
		return resp, err
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return resp, fmt.Errorf("lambdatest: the response is not a LambdaFunctionURLResponse: %w: %.500s", err, out)
	}
	return resp, nil
}
