package peers

import "fmt"

// QueueEnv is the environment Knative gives queue-proxy beside a revision's
// container (pkg/queue/sharedmain reads it), for one backend on userPort
// with container concurrency 0 (no limit, Knative's default).
func QueueEnv(servingPort, tlsPort, userPort int) []string {
	return []string{
		"SERVING_NAMESPACE=bench",
		"SERVING_SERVICE=backend",
		"SERVING_CONFIGURATION=backend",
		"SERVING_REVISION=backend-00001",
		"SERVING_POD=backend-00001-deployment-0",
		"SERVING_POD_IP=127.0.0.1",
		fmt.Sprintf("QUEUE_SERVING_PORT=%d", servingPort),
		fmt.Sprintf("QUEUE_SERVING_TLS_PORT=%d", tlsPort),
		fmt.Sprintf("USER_PORT=%d", userPort),
		"CONTAINER_CONCURRENCY=0",
		"REVISION_TIMEOUT_SECONDS=300",
		`SERVING_LOGGING_CONFIG={"level":"warn","encoding":"json","outputPaths":["stdout"],"errorOutputPaths":["stderr"]}`,
		"SERVING_LOGGING_LEVEL=warn",
	}
}
