package sdk

// Error codes of lifecycle hooks at admission (API.md "Lifecycle hooks").
const (
	// CodePromptDenied: the lifecycle hook consumer denied the prompt
	// (user_prompt_submit); nothing was written.
	CodePromptDenied = "PROMPT_DENIED"
	// CodeHookUnavailable: the lifecycle hook consumer could not be
	// reached, timed out or answered a non-2xx status; the prompt was not
	// admitted (fail closed) and nothing was written.
	CodeHookUnavailable = "HOOK_UNAVAILABLE"
	// CodeHookInvalidResponse: the lifecycle hook consumer's answer is not
	// a valid response for the event; the prompt was not admitted.
	CodeHookInvalidResponse = "HOOK_INVALID_RESPONSE"
)
