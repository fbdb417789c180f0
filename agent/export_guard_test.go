package agent

// Test-only access to loop detection's parts (issue 16).

// LoopIn reports the limit the last hop of chain passes, "" for none.
var LoopIn = loopIn
