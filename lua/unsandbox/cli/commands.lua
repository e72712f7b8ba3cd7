--- The command table of `un`: every command, its actions, the arguments
-- and options each takes, a line of help, and the function that runs it.
-- The parser (cli/parse.lua), `--help` and un(1) (cli/help.lua) read this
-- table and nothing else, so adding a subcommand is one entry here plus
-- its function. An entry: name, summary (one line), about (more, for its
-- own --help), args ("ID [NAME]", "NAME CMD...": what the parser counts),
-- options (keys of cli/options.lua), run = function(o, conn) returning
-- the exit code (nil: 0), where conn is the command's connection: a
-- Client (api "exec"), a Manager (api "cp") or nothing (api "none").
-- A command with actions has `default`, the action of `un CMD` alone.
-- Internal module.
local attach = require "unsandbox.cli.attach"
local cp = require "unsandbox.cli.cp"
local exec = require "unsandbox.cli.exec"
local localserver = require "unsandbox.cli.localserver"
local run = require "unsandbox.cli.run"

local function action(name, args, summary, f, opts, about)
  return { name = name, args = args, summary = summary, run = f, options = opts, about = about }
end

local RUN_OPTIONS = { "language", "env", "file", "network", "ttl", "artifacts", "outdir" }
local SUDO = "; a sudo challenge asks for the one-time password on standard input"

return {
  { name = "run", api = "exec", args = "[FILE|CODE|-]", more = true, options = RUN_OPTIONS,
    summary = "run a file, or with -s LANG the code given (- reads it from standard input)",
    run = run.main },
  { name = "languages", api = "exec", summary = "the languages the service runs",
    run = exec.languages },
  { name = "jobs", api = "exec", options = { "get", "cancel" },
    summary = "the active jobs; --get ID a job's state and result; --cancel ID cancels one",
    run = exec.jobs },
  { name = "key", api = "exec", summary = "validate the key pair: its public key, tier and limits",
    run = exec.key },
  { name = "session", api = "exec", default = "list",
    summary = "sessions: a sandbox whose files stay between commands",
    actions = {
      action("list", nil, "list your sessions", exec.session.list),
      action("create", nil, "create a session; prints its id", exec.session.create,
        { "shell", "network", "ttl", "tmux", "screen" }),
      action("get", "ID", "a session's state", exec.session.get),
      action("exec", "ID CMD...", "run a command in the session; one CMD is a shell line, several "
        .. "words an argv; prints its output and exits with its code", exec.session.exec),
      action("attach", "ID", "the session's shell on this terminal (detach: Ctrl-] then d); piped "
        .. "input is sent as it comes; exits with the shell's code", attach.command),
      action("snapshot", "ID [NAME]", "snapshot the session's files; prints the snapshot's id",
        exec.session.snapshot),
      action("freeze", "ID", "freeze the session's processes (commands refused until unfreeze)",
        exec.session.freeze),
      action("unfreeze", "ID", "let a frozen session run again", exec.session.unfreeze),
      action("boost", "ID [VCPU]", "give the session's later commands VCPU cpus (default: the "
        .. "service's boost)", exec.session.boost),
      action("unboost", "ID", "back to one vcpu", exec.session.unboost),
      action("delete", "ID", "delete the session and its files" .. SUDO, exec.session.delete),
    } },
  { name = "service", api = "exec", default = "list",
    summary = "services: a long-running bootstrap command in its own sandbox",
    actions = {
      action("list", nil, "list your services", exec.service.list),
      action("create", "NAME BOOTSTRAP", "create a service running BOOTSTRAP; prints its id",
        exec.service.create, { "network" }),
      action("get", "ID", "a service's state", exec.service.get),
      action("exec", "ID CMD...", "run a command in the service's sandbox; one CMD is a shell "
        .. "line, several words an argv; exits with its code", exec.service.exec),
      action("logs", "ID", "the bootstrap's output", exec.service.logs, { "all" }),
      action("snapshot", "ID [NAME]", "snapshot the service; prints the snapshot's id", exec.service.snapshot),
      action("freeze", "ID", "freeze the service's processes", exec.service.freeze),
      action("unfreeze", "ID", "let a frozen service run again", exec.service.unfreeze),
      action("lock", "ID", "lock the service (it cannot be deleted)", exec.service.lock),
      action("unlock", "ID", "unlock the service" .. SUDO, exec.service.unlock),
      action("resize", "ID VCPU", "give the service VCPU cpus", exec.service.resize),
      action("update", "ID KEY=VALUE...", "change vcpu=N, unfreeze_on_demand=BOOL, "
        .. "show_freeze_page=BOOL", exec.service.update),
      action("domains", "ID add|remove|replace NAME...", "change the service's custom domains",
        exec.service.domains),
      action("redeploy", "ID [BOOTSTRAP]", "restart the bootstrap (a new one if given)", exec.service.redeploy),
      action("env", "ID", "the env vault's state (never its values)", exec.service.env),
      action("env-set", "ID FILE|-", "store a .env file in the vault (- reads standard input)",
        exec.service.env_set),
      action("env-export", "ID", "print the vault as a .env file", exec.service.env_export),
      action("env-delete", "ID", "empty the vault", exec.service.env_delete),
      action("delete", "ID", "delete the service" .. SUDO, exec.service.delete),
    } },
  { name = "snapshot", api = "exec", default = "list",
    summary = "snapshots of sessions and services",
    actions = {
      action("list", nil, "list your snapshots", exec.snapshot.list),
      action("get", "ID", "a snapshot's details", exec.snapshot.get),
      action("create", "session|service ID [NAME]", "snapshot a session or service; prints its id",
        exec.snapshot.create),
      action("restore", "ID", "put the snapshot's files back into its session or service",
        exec.snapshot.restore),
      action("clone", "ID session|service [NAME]", "a new session or service from the snapshot; "
        .. "prints its id", exec.snapshot.clone),
      action("lock", "ID", "lock the snapshot (it cannot be deleted)", exec.snapshot.lock),
      action("unlock", "ID", "unlock the snapshot" .. SUDO, exec.snapshot.unlock),
      action("delete", "ID", "delete the snapshot" .. SUDO, exec.snapshot.delete),
    } },
  { name = "image", api = "exec", default = "list",
    summary = "images: published services and snapshots that can be shared and spawned",
    actions = {
      action("list", "[all|owned|shared|public]", "list images (default all)", exec.image.list),
      action("get", "ID", "an image's details", exec.image.get),
      action("publish", "service|snapshot ID [NAME]", "publish an image; prints its id", exec.image.publish),
      action("visibility", "ID private|unlisted|public", "who sees the image", exec.image.visibility),
      action("grant", "ID KEY", "let the public key KEY use the image", exec.image.grant),
      action("revoke", "ID KEY", "take the use of the image back from KEY", exec.image.revoke),
      action("trusted", "ID", "the keys the image is shared with", exec.image.trusted),
      action("transfer", "ID KEY", "give the image to KEY", exec.image.transfer),
      action("spawn", "ID [NAME]", "a new service from the image; prints its id", exec.image.spawn),
      action("clone", "ID [NAME]", "a copy of the image; prints its id", exec.image.clone),
      action("lock", "ID", "lock the image (it cannot be deleted)", exec.image.lock),
      action("unlock", "ID", "unlock the image" .. SUDO, exec.image.unlock),
      action("delete", "ID", "delete the image" .. SUDO, exec.image.delete),
    } },
  { name = "sandbox", api = "cp", default = "list",
    summary = "Control Plane sandboxes: named, with a persistent /workspace",
    actions = {
      action("list", nil, "list the running sandboxes (runtimes)", cp.sandbox.list),
      action("create", "[NAME]", "create (or start) a sandbox; prints its name and sandbox id", cp.sandbox.create,
        { "template" }),
      action("run", "NAME CMD...", "run a command, its output streamed as it comes; one CMD is a "
        .. "shell line, several words an argv (each stays one word); exits with its code",
        cp.sandbox.run, { "timeout" }),
      action("read", "NAME PATH", "print a file (PATH relative to /workspace, or under it)", cp.sandbox.read),
      action("write", "NAME PATH [FILE|-]", "write a file from FILE or standard input", cp.sandbox.write),
      action("checkpoint", "NAME", "checkpoint the workspace; prints the checkpoint's id and sha256",
        cp.sandbox.checkpoint),
      action("checkpoints", "NAME", "list the workspace's checkpoints", cp.sandbox.checkpoints),
      action("restore", "NAME CHECKPOINT", "put a checkpoint's files back", cp.sandbox.restore),
      action("stop", "NAME", "stop the sandbox's runtime (its files stay)", cp.sandbox.stop),
      action("exec", "NAME CMD...", "start a process (one CMD is a shell line, several words an argv); "
        .. "its stdout and stderr stream apart as they come; exits with its code", cp.sandbox.exec, { "stdin" }),
      action("cp", "SRC DEST", "copy a file or a directory, one side NAME:PATH; streamed, sha256 checked, "
        .. "a progress bar when stderr is a terminal", cp.sandbox.cp),
      action("ps", "NAME", "list the sandbox's processes (those of `un sandbox exec` and sb:spawn)", cp.sandbox.ps),
      action("kill", "NAME ID", "send a signal to a process (it stays listed, with its end)", cp.sandbox.kill,
        { "signal" }),
    } },
  { name = "object", api = "cp", options = { "subject", "owner" },
    summary = "Control Plane object storage (needs --subject HEX, or --owner T/S with admin credentials)",
    about = "Control Plane object storage. LOCATOR is upload:UPLOAD_ID[/PATH] or "
      .. "agent:AGENT_ID/RUN_ID/PATH. Objects belong to a subject: a tenant key with "
      .. "act_as_subjects names it with --subject HEX (32 hex characters: "
      .. "unsandbox.acting_subject(salt, tenant, user) makes one), admin credentials with "
      .. "--owner TENANT/SUBJECT.",
    actions = {
      action("put", "LOCATOR [FILE|-]", "store FILE (or standard input) as an object", cp.object.put),
      action("get", "LOCATOR", "print an object's content", cp.object.get),
      action("ls", "LOCATOR", "list the objects under a locator", cp.object.ls),
      action("rm", "LOCATOR", "delete an object", cp.object.rm, { "purge" }),
    } },
  { name = "admin", api = "cp", default = "tenants",
    summary = "Control Plane administration: tenants, keys, audit (admin credentials)",
    actions = {
      action("tenants", "[list|create|suspend] [ID]", "list tenants, or create or suspend one",
        cp.admin.tenants),
      action("keys", "[list|issue|issue-admin|revoke] [ID]", "list keys (a tenant's with ID), issue "
        .. "a tenant's (ID) or an admin key, or revoke one", cp.admin.keys, { "label", "act_as" }),
      action("audit", nil, "the newest audit rows", cp.admin.audit, { "limit" }),
    } },
  { name = "local", api = "none", default = "status",
    summary = "the local unsandboxd that stays up between commands (state in ~/.unsandbox/local/)",
    about = "The local unsandboxd that stays up between commands: one per user, on loopback "
      .. "only, its data (keys, sessions, workspaces) under ~/.unsandbox/local/. While it runs, "
      .. "`un --local` and `unlua --local` use it (they say so on stderr); when none runs they "
      .. "start a private one for one command.",
    actions = {
      action("start", nil, "start it in the background (nothing if it runs)", localserver.start),
      action("status", nil, "whether it runs, its pid, URLs and files", localserver.status),
      action("env", nil, "its settings as `export` lines: eval \"$(un local env)\" points any "
        .. "program at it", localserver.env),
      action("stop", nil, "stop it (its data stays for the next start)", localserver.stop),
    } },
}
