-- #integration: a 256 MiB file up to a workspace and back, from and to
-- local files, with this process's RSS sampled at every progress call:
-- the client holds one piece at a time, so its memory stays flat however
-- large the file (the figures are printed; make bench measures rates).
-- Progress is monotone and ends at the size; both sha256 are checked.
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"

-- One Lua: one 256 MiB proof is enough; agent_transfer_spec runs the same
-- code under every Lua at small sizes.
-- Under the sanitizers (UNSB_SANITIZE) the file is 64 MiB and its RSS is
-- not judged: ASan's quarantine keeps freed memory resident by design.
local SANITIZED = os.getenv("UNSB_SANITIZE") == "1"

local MIB = 1048576
local SIZE_MIB = SANITIZED and 64 or 256
local SIZE = SIZE_MIB * MIB

local function rss_kb()
  local f = io.open("/proc/self/status")
  local text = f and f:read("a") or ""
  if f then f:close() end
  return tonumber(text:match("VmRSS:%s+(%d+)")) or 0
end

describe("a big transfer (256 MiB) #integration", function()
  local srv, unsandbox, core, sb, dir

  setup(function()
    srv = server.start { args = { "--disk-mb", "1024" } }
    unsandbox = require "unsandbox"
    core = require "unsandbox.core"
    local m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
    sb = assert(unsandbox.Sandbox.create { name = "big", manager = m })
    dir = fs.tmpdir("unsb-big")
  end)
  teardown(function()
    if sb then sb:close() end
    if srv then srv.stop() end
    if dir then fs.rm_rf(dir) end
  end)

  -- samples RSS at each progress call; checks monotone progress
  local function watcher(total)
    local w = { last = -1, base = nil, peak = 0, calls = 0 }
    function w.progress(done, t)
      assert.equal(total, t)
      assert.is_true(done >= w.last, "progress went back")
      w.last, w.calls = done, w.calls + 1
      collectgarbage("step")
      local kb = rss_kb()
      if done >= 16 * MIB and not w.base then w.base = kb end
      if w.base then w.peak = math.max(w.peak, kb) end
    end
    return w
  end

  it("goes up and down with flat client memory and checked sha256", function()
    local src = dir .. "/src.bin"
    local f = assert(io.open(src, "wb"))
    local hash = core.codec.sha256_stream()
    local block = {}
    for i = 1, MIB / 8 do block[i] = string.format("%08x", i) end
    block = table.concat(block)
    for i = 1, SIZE / MIB do
      local piece = block:sub(1, MIB - 8) .. string.format("%08x", i)
      hash:update(piece)
      f:write(piece)
    end
    f:close()
    local sha = hash:hex()

    local up = watcher(SIZE)
    local t0 = core.loop.monotonic_ms()
    local r = assert(sb:upload({ path = src }, "big/file.bin", { on_progress = up.progress }))
    local up_s = (core.loop.monotonic_ms() - t0) / 1000
    assert.same({ SIZE, sha }, { r.bytes, r.sha256 })
    assert.equal(SIZE, up.last)
    assert.equal(SIZE, assert(sb:stat("big/file.bin")).size)

    local down = watcher(SIZE)
    t0 = core.loop.monotonic_ms()
    local _, info = assert(sb:download("big/file.bin", dir .. "/back.bin", { on_progress = down.progress }))
    local down_s = (core.loop.monotonic_ms() - t0) / 1000
    assert.equal(sha, info.sha256)
    assert.equal(SIZE, down.last)
    local back = core.codec.sha256_stream()
    local g = assert(io.open(dir .. "/back.bin", "rb"))
    for piece in function() return g:read(MIB) end do back:update(piece) end
    g:close()
    assert.equal(sha, back:hex())

    print(string.format("\n%d MiB upload: %.1f s (%.1f MiB/s), client RSS %.1f MiB after 16 MiB, peak %.1f MiB",
      SIZE_MIB, up_s, SIZE_MIB / up_s, up.base / 1024, up.peak / 1024))
    print(string.format("%d MiB download: %.1f s (%.1f MiB/s), client RSS %.1f MiB after 16 MiB, peak %.1f MiB",
      SIZE_MIB, down_s, SIZE_MIB / down_s, down.base / 1024, down.peak / 1024))
    if SANITIZED then return end
    -- flat: what the rest of the file adds is far below the file's size
    assert.is_true(up.peak - up.base < 48 * 1024, "upload RSS grew by " .. (up.peak - up.base) .. " KiB")
    assert.is_true(down.peak - down.base < 48 * 1024, "download RSS grew by " .. (down.peak - down.base) .. " KiB")
  end)
end)
