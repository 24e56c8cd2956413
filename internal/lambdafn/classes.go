package lambdafn

import "strings"

// BackgroundQueueURL reads the optional FIFO input queue of background
// threads (EnvBackgroundQueueURL). Empty means one input queue for both
// classes; see sqsq.NewClassQueues.
func (r *Reader) BackgroundQueueURL() string {
	v := r.Opt(EnvBackgroundQueueURL)
	if v != "" && !strings.HasSuffix(v, ".fifo") {
		r.Fail(EnvBackgroundQueueURL, "%q is not a FIFO queue URL (the name must end in .fifo)", v)
	}
	return v
}
