package guard

// protocolMethods are the methods of the MCP schemas mcpcage speaks
// (2024-11-05 to 2025-11-25, and the stateless 2026-07-28), in either
// direction. They name the kinds of the flood bound; any other method
// counts under one kind for all.
var protocolMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "subscriptions/listen": true,
	"tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "completion/complete": true,
	"logging/setLevel": true, "roots/list": true, "sampling/createMessage": true, "elicitation/create": true,
	"tasks/get": true, "tasks/result": true, "tasks/list": true, "tasks/cancel": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/message": true, "notifications/roots/list_changed": true,
	"notifications/tools/list_changed": true, "notifications/prompts/list_changed": true,
	"notifications/resources/list_changed": true, "notifications/resources/updated": true,
	"notifications/elicitation/complete": true, "notifications/tasks/status": true,
	"notifications/subscriptions/acknowledged": true,
}
