--- The exit codes of `un`. A command that runs a program (`un FILE`,
-- `un -s LANG CODE`, `un session exec`, `un service exec`, `un session
-- attach`, `un sandbox run`) exits with the program's own code. Every
-- failure of `un` itself prints one line on stderr, starting `un:`, and
-- exits with a code of sysexits.h (64 to 78), which programs seldom use;
-- when a program's own code is one of those, `un` says so on stderr
-- (`[un] exit code 69 is the program's own`), and `--json` gives it as
-- the result's exit_code, so the two can always be told apart.
-- @module unsandbox.cli.exits
local M = {}

--- The codes.
-- @table codes
-- @tfield integer ok 0: done (or the program exited 0)
-- @tfield integer usage 64 (EX_USAGE): bad arguments: an unknown option or
-- command, a missing or malformed argument
-- @tfield integer service 69 (EX_UNAVAILABLE): the service refused or failed the
-- request (an HTTP error, no connection, a reply the client cannot use),
-- or the run did not finish (its job failed or was cancelled)
-- @tfield integer io 74 (EX_IOERR): a local I/O error after a program that exited
-- 0 (an artifact that cannot be saved); after one that did not, its own
-- code is kept
-- @tfield integer timeout 75 (EX_TEMPFAIL): the program exceeded its time limit, or
-- the call its deadline
-- @tfield integer auth 77 (EX_NOPERM): no credentials, or the service refused them
-- (401, 403)
-- @tfield integer internal 70 (EX_SOFTWARE): an error inside un itself (a bug)
-- @tfield integer interrupted 130: Ctrl-C (the job `un` submitted is cancelled)
M.codes = {
  ok = 0, usage = 64, service = 69, internal = 70, io = 74, timeout = 75, auth = 77, interrupted = 130,
}

--- Is code one of un's own (so a program's exit with it needs a word)?
-- @tparam integer code an exit code
-- @treturn boolean true for the codes of the table above but 0
function M.is_own(code)
  for name, c in pairs(M.codes) do
    if c == code and name ~= "ok" then return true end
  end
  return false
end

-- The codes as "N name" lines, for --help and the man page.
M.TEXT = {
  { 64, "bad arguments (an unknown option or command, a missing or malformed argument)" },
  { 69, "the service refused or failed the request, or the run did not finish" },
  { 70, "an error inside un itself (a bug: please report it)" },
  { 74, "a local I/O error (an artifact not saved) after a program that exited 0" },
  { 75, "timeout: the program exceeded its time limit, or the call its deadline" },
  { 77, "authentication: no credentials, or the service refused them" },
  { 130, "interrupted (Ctrl-C); the job un submitted is cancelled" },
}

return M
