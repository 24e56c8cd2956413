package cost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// PricesNote is printed with every estimate.
const PricesNote = "prices are the user's to keep current: they change, and differ by region; " +
	"check each against its page and pass your own with -prices FILE"

// Prices is a table of unit prices in US dollars, for one region, on
// demand, without free tiers or savings plans. A JSON file overlays it
// field by field (LoadPrices); its JSON names are the fields' tags.
type Prices struct {
	// Region, Date (when the figures were read) and Source (who set them:
	// "built in" or the file) describe the table as a whole.
	Region string `json:"region"`
	Date   string `json:"date"`
	Source string `json:"source"`

	LambdaGBSecond       float64 `json:"lambda_arm64_gb_second"`        // per GB-second, arm64
	LambdaMillionReqs    float64 `json:"lambda_million_requests"`       // per million invocations
	SQSFIFOMillionReqs   float64 `json:"sqs_fifo_million_requests"`     // per million FIFO requests (each 64 KB chunk is one)
	SQSStdMillionReqs    float64 `json:"sqs_standard_million_requests"` // per million standard requests
	DSQLMillionDPUs      float64 `json:"dsql_million_dpus"`             // per million DPUs
	DSQLGBMonth          float64 `json:"dsql_gb_month"`                 // storage, per GB-month
	DynamoMillionWRUs    float64 `json:"dynamodb_million_write_units"`  // on-demand, per million write request units
	DynamoMillionRRUs    float64 `json:"dynamodb_million_read_units"`   // on-demand, per million read request units
	DynamoGBMonth        float64 `json:"dynamodb_gb_month"`             // table storage, per GB-month
	DynamoPITRGBMonth    float64 `json:"dynamodb_pitr_gb_month"`        // point-in-time recovery, per GB-month
	SchedulerMillionInvs float64 `json:"scheduler_million_invocations"` // EventBridge Scheduler, per million invocations
	LogsIngestGB         float64 `json:"logs_ingest_gb"`                // CloudWatch Logs ingestion, per GB
	LogsStoreGBMonth     float64 `json:"logs_store_gb_month"`           // CloudWatch Logs storage, per GB-month

	// Instances is the always-on comparison's table: on-demand Linux
	// instances of the same region.
	Instances []Instance `json:"instances"`
}

// Instance is one always-on instance size.
type Instance struct {
	Name      string  `json:"name"`
	MemoryGiB float64 `json:"memory_gib"`
	HourlyUSD float64 `json:"hourly_usd"`
}

// priceField is one unit price with its JSON name and the page it came
// from (DefaultPrices).
type priceField struct {
	name, page string
	v          *float64
}

// fields lists p's unit prices in print order.
func (p *Prices) fields() []priceField {
	const (
		lambda    = "https://aws.amazon.com/lambda/pricing/"
		sqs       = "https://aws.amazon.com/sqs/pricing/"
		dsql      = "https://aws.amazon.com/rds/aurora/dsql/pricing/"
		dynamo    = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
		scheduler = "https://aws.amazon.com/eventbridge/pricing/"
		logs      = "https://aws.amazon.com/cloudwatch/pricing/"
	)
	return []priceField{
		{"lambda_arm64_gb_second", lambda, &p.LambdaGBSecond},
		{"lambda_million_requests", lambda, &p.LambdaMillionReqs},
		{"sqs_fifo_million_requests", sqs, &p.SQSFIFOMillionReqs},
		{"sqs_standard_million_requests", sqs, &p.SQSStdMillionReqs},
		{"dsql_million_dpus", dsql, &p.DSQLMillionDPUs},
		{"dsql_gb_month", dsql, &p.DSQLGBMonth},
		{"dynamodb_million_write_units", dynamo, &p.DynamoMillionWRUs},
		{"dynamodb_million_read_units", dynamo, &p.DynamoMillionRRUs},
		{"dynamodb_gb_month", dynamo, &p.DynamoGBMonth},
		{"dynamodb_pitr_gb_month", dynamo, &p.DynamoPITRGBMonth},
		{"scheduler_million_invocations", scheduler, &p.SchedulerMillionInvs},
		{"logs_ingest_gb", logs, &p.LogsIngestGB},
		{"logs_store_gb_month", logs, &p.LogsStoreGBMonth},
	}
}

// Unconfirmed names the built-in prices that could not be read on the
// provider's own page when the table was written, with the pages they
// were taken from instead (docs/cost.md): the report marks them.
var Unconfirmed = map[string]string{
	"dsql_million_dpus": "the stored copy of AWS's pricing page shows no figure; $8.00 per million DPUs in us-east-1 is what " + dsqlThirdParty,
	"dsql_gb_month":     "the stored copy of AWS's pricing page shows no figure; $0.33 per GB-month in us-east-1 is what " + dsqlThirdParty,
}

// dsqlThirdParty: the independent pages that agree on DSQL's us-east-1
// prices, read 2026-12-02.
const dsqlThirdParty = "four independent pages agree on (read 2026-12-02): usage.ai's Aurora DSQL pricing guide, " +
	"blog.faridnsh.ninja \"Unraveling Aurora DSQL Pricing\" (updated April 2026), DoiT's DSQL cost analysis (July 2025), SST's DSQL component docs"

// DefaultPrices returns the built-in table: us-east-1 on-demand prices as
// recorded on DefaultPrices().Date. They are not fetched and will go
// stale; see PricesNote.
func DefaultPrices() Prices {
	return Prices{
		Region: "us-east-1",
		Date:   "2026-12-01",
		Source: "built in (internal/cost/prices.go)",

		LambdaGBSecond:       0.0000133334,
		LambdaMillionReqs:    0.20,
		SQSFIFOMillionReqs:   0.50,
		SQSStdMillionReqs:    0.40,
		DSQLMillionDPUs:      8.00,
		DSQLGBMonth:          0.33,
		DynamoMillionWRUs:    0.625,
		DynamoMillionRRUs:    0.125,
		DynamoGBMonth:        0.25,
		DynamoPITRGBMonth:    0.20,
		SchedulerMillionInvs: 1.00,
		LogsIngestGB:         0.50,
		LogsStoreGBMonth:     0.03,

		// https://aws.amazon.com/ec2/pricing/on-demand/ (Linux, us-east-1).
		Instances: []Instance{
			{"t4g.medium", 4, 0.0336},
			{"m7g.large", 8, 0.0816},
			{"r7g.large", 16, 0.1071},
			{"r7g.xlarge", 32, 0.2142},
			{"r7g.2xlarge", 64, 0.4284},
			{"r7g.4xlarge", 128, 0.8568},
		},
	}
}

// LoadPrices reads a JSON table and overlays it on DefaultPrices: a field
// the file leaves out keeps its built-in value; "instances", when given,
// replaces the whole table. An unknown field or a bad value is an error
// naming the field. The result's Source is source unless the file sets
// one.
func LoadPrices(r io.Reader, source string) (Prices, error) {
	p := DefaultPrices()
	p.Source = source
	b, err := io.ReadAll(r)
	if err != nil {
		return Prices{}, fmt.Errorf("cost: reading prices %s: %w", source, err)
	}
	// Decoding into the built-in instances would keep their fields where
	// the file's entries leave them out; the file's table starts empty.
	p.Instances = nil
	if err := decodeStrict(b, &p); err != nil {
		return Prices{}, fmt.Errorf("cost: prices %s: %w", source, err)
	}
	if p.Instances == nil {
		p.Instances = DefaultPrices().Instances
	}
	if err := p.Validate(); err != nil {
		return Prices{}, fmt.Errorf("cost: prices %s: %w", source, err)
	}
	return p, nil
}

// Validate checks that every price is a finite number, not negative, and
// that the instance table is usable.
func (p *Prices) Validate() error {
	for _, f := range p.fields() {
		if v := *f.v; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: %v is not a price (want a finite number ≥ 0)", f.name, v)
		}
	}
	if len(p.Instances) == 0 {
		return errors.New("instances: the always-on comparison needs at least one instance")
	}
	for i, in := range p.Instances {
		switch {
		case in.Name == "":
			return fmt.Errorf("instances[%d].name: empty", i)
		case !(in.MemoryGiB > 0) || math.IsInf(in.MemoryGiB, 0):
			return fmt.Errorf("instances[%d].memory_gib: %v is not a memory size (want > 0)", i, in.MemoryGiB)
		case !(in.HourlyUSD >= 0) || math.IsInf(in.HourlyUSD, 0):
			return fmt.Errorf("instances[%d].hourly_usd: %v is not a price (want ≥ 0)", i, in.HourlyUSD)
		}
	}
	return nil
}

// decodeStrict decodes one JSON object into v, refusing unknown fields
// and trailing data, and rewords type errors to name the field.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: want a %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}
