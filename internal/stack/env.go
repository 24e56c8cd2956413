package stack

// The environment variables the functions read: the contract between this
// stack and cmd/slicefn, cmd/rapreceiver and cmd/delayrelay.
//
//	variable                         slicefn  rapreceiver  delayrelay
//	AGENTSLICE_INPUT_QUEUE_URL          x         x            x
//	AGENTSLICE_DLQ_URL                  x
//	AGENTSLICE_OUTPUT_QUEUE_URL         x         x   (live views)
//	AGENTSLICE_DELAY_QUEUE_URL          x
//	AGENTSLICE_DEDUP_TABLE              x         x   (live views)
//	AGENTSLICE_DSQL_ENDPOINT            x         x
//	AGENTSLICE_DSQL_USER                x         x   (DSQLAppRole; DSQLReaderRole)
//	AGENTSLICE_SCHEDULER_ROLE_ARN       x
//	AGENTSLICE_SCHEDULE_GROUP           x
//	AGENTSLICE_SCHEDULE_DLQ_ARN         x
//	AGENTSLICE_MODEL_CATALOG            x
//	AGENTSLICE_MODEL                    x
//	AGENTSLICE_AGENTS                   x   (or AGENTSLICE_AGENTS_FILE)
//	AGENTSLICE_TOOL_SERVERS             x
//	AGENTSLICE_CALLBACK_URL             x
//	AGENTSLICE_CALLBACK_KEYS_SECRET     x         x
//	AGENTSLICE_TREE_BUDGETS             x   (StackProps.TreeBudgets; options.go)
//	AGENTSLICE_SHARED_TPM               x   (StackProps.SharedTPM)
//	OTEL_*                              x         x            x   (StackProps.Telemetry)
const (
	EnvInputQueueURL      = "AGENTSLICE_INPUT_QUEUE_URL"
	EnvBackgroundQueueURL = "AGENTSLICE_BACKGROUND_QUEUE_URL" // background threads' FIFO input queue
	EnvDLQURL             = "AGENTSLICE_DLQ_URL"              // the input queue's FIFO DLQ
	EnvOutputQueueURL     = "AGENTSLICE_OUTPUT_QUEUE_URL"
	EnvDelayQueueURL      = "AGENTSLICE_DELAY_QUEUE_URL"
	EnvDedupTable         = "AGENTSLICE_DEDUP_TABLE"   // table name
	EnvDSQLEndpoint       = "AGENTSLICE_DSQL_ENDPOINT" // cluster host name
	EnvDSQLUser           = "AGENTSLICE_DSQL_USER"     // database role: DSQLAppRole
	EnvSchedulerRoleARN   = "AGENTSLICE_SCHEDULER_ROLE_ARN"
	EnvScheduleGroup      = "AGENTSLICE_SCHEDULE_GROUP"
	EnvScheduleDLQARN     = "AGENTSLICE_SCHEDULE_DLQ_ARN" // the Scheduler's standard DLQ
	EnvModelCatalog       = "AGENTSLICE_MODEL_CATALOG"    // model.Catalog JSON
	EnvModel              = "AGENTSLICE_MODEL"            // catalog name; empty = default
	EnvAgents             = "AGENTSLICE_AGENTS"           // agents document JSON (deploy/agents.json resolved)
	EnvAgentsFile         = "AGENTSLICE_AGENTS_FILE"      // instead of EnvAgents when too large: AgentsFileName in the asset
	EnvToolServers        = "AGENTSLICE_TOOL_SERVERS"     // comma-separated RAP base URLs
	EnvCallbackURL        = "AGENTSLICE_CALLBACK_URL"     // receiver URL + "rap/callback"
	EnvCallbackKeysSecret = "AGENTSLICE_CALLBACK_KEYS_SECRET"
)

// DSQLAppRole is the database role the slice function connects as
// (dsql.AppRole; a test checks they agree). `agentslice migrate
// --app-role-arn <SliceRoleArn>` creates it with only the store's DML and
// maps the slice function's IAM role to it; the function's policy allows
// dsql:DbConnect (not DbConnectAdmin).
const DSQLAppRole = "agentslice_app"

// DSQLReaderRole is the database role the callback receiver connects as
// (dsql.ReaderRole; a test checks they agree) to look up a thread's
// priority class: SELECT on the thread rows only. `agentslice migrate
// --receiver-role-arn <ReceiverRoleArn>` creates it and maps the receiver's
// IAM role to it.
const DSQLReaderRole = "agentslice_reader"

// CallbackPath is the path of the receiver's Function URL that callback URLs
// point at (the Function URL ends with "/", so the callback URL is
// "https://<id>.lambda-url.<region>.on.aws/rap/callback").
const CallbackPath = "rap/callback"

// Lambda allows 4 KB of environment per function (names and values). The
// slice function's values known only at deploy time (queue URLs, ARNs,
// names, the endpoint) are estimated at deployValueBytes each; what is left
// is the budget for the catalog, the tool server list and the model name
// (and the agents, which otherwise ship as a file: agentsfile.go).
const (
	lambdaEnvBytes   = 4096
	deployValueBytes = 140
)
