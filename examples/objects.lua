-- objects.lua: per-user object storage with acting subjects.
--   unlua --local examples/objects.lua
-- An application holds a secret salt and acts for its users: each user
-- becomes a pseudonymous subject (X-Acting-Subject), bound per coroutine,
-- with a private partition of the object store. Here the example makes
-- its own tenant and key with the token unlua --local exported (an admin
-- credential); a real application gets its key from the platform's admin.
local unsandbox = require "unsandbox"

local admin = assert(unsandbox.manager())
local tenant = "example-" .. unsandbox.new_trace_id():sub(1, 6)
assert(admin:create_tenant(tenant, { display_name = "objects example" }))
local key = assert(admin:issue_tenant_key(tenant, { permissions = { "act_as_subjects" } }))
local app = assert(unsandbox.manager { token = key.api_key })

local salt = "example salt: keep it secret, keep it safe (32+ bytes)"
local alice = unsandbox.acting_subject(salt, tenant, "alice@example.com")
local bob = unsandbox.acting_subject(salt, tenant, "bob@example.com")
print("alice is " .. alice .. ", bob is " .. bob)

local report = { scope = "agent", agent_id = "Report Writer", run_id = "2024-06-01 #1",
                 path = "outputs/report.txt" }

app:with_subject(alice, function()
  local put = assert(app:put_agent_blob(report.agent_id, report.run_id, report.path,
    "Q2 numbers: up 12%\n", "text/plain"))
  print(string.format("alice stored %s/%s (%d bytes, sha256 %s...)", put.bucket, put.key,
    put.bytes, put.sha256:sub(1, 12)))
  local reader = assert(app:open_object(report))
  io.write("alice reads: ", reader:read("a"))
  for _, o in ipairs(assert(app:list_objects { scope = "agent", agent_id = report.agent_id,
                                                run_id = report.run_id }).objects) do
    print("  listed: " .. o.key .. " (" .. o.bytes .. " bytes)")
  end
end)

app:with_subject(bob, function()
  local r, err = app:stat_object(report)
  print("bob looks for alice's report: " .. (r and "found (wrong!)" or err.status .. " " .. err.message))
end)

app:with_subject(alice, function()
  assert(app:delete_object(report, true))
  print("alice deleted her report")
end)
assert(admin:suspend_tenant(tenant))
