-- The code blocks of a Markdown text, for spec/docs_blocks_spec.lua: the
-- ```lua and ```sh blocks (other fences, such as ```c or ```text, are
-- not run). A block may be preceded, on the line right before its fence,
-- by a marker the rendered page does not show:
--   <!-- run: skip REASON -->    not run (REASON is required)
-- Nothing else is added to a block: it runs as printed.
-- Returns a list of {line =, lang =, code =, skip =}, or raises for a
-- fence that is never closed or a marker it does not know.
local M = {}

local RUN = { lua = true, sh = true }

local function marker(line, lineno)
  local body = line:match("^<!%-%- run: (.-) %-%->$")
  if not body then
    if line:match("^<!%-%- run") or line:match("readme_spec") then
      error(string.format("line %d: bad run marker %q", lineno, line), 0)
    end
    return nil
  end
  local verb, rest = body:match("^(%a+)%s*(.*)$")
  if verb == "skip" and rest ~= "" then return { skip = rest } end
  error(string.format("line %d: bad run marker %q", lineno, line), 0)
end

function M.blocks(text)
  local out, current, pending = {}, nil, nil
  local lineno = 0
  for line in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    if current then
      if line:match("^```%s*$") then
        current.code = table.concat(current.lines, "\n") .. "\n"
        current.lines = nil
        if RUN[current.lang] then out[#out + 1] = current end
        current = nil
      else
        current.lines[#current.lines + 1] = line
      end
    elseif line:match("^```") then
      local m = pending or {}
      current = { line = lineno, lines = {}, skip = m.skip, lang = line:match("^```(%w*)") }
      if m.skip and not RUN[current.lang] then
        error(string.format("line %d: a run marker before a ```%s block", lineno - 1, current.lang), 0)
      end
      pending = nil
    else
      if pending then
        error(string.format("line %d: a run marker must be right before a code block", lineno - 1), 0)
      end
      pending = marker(line, lineno)
    end
  end
  if current then error(string.format("line %d: a ```%s block is never closed", current.line, current.lang), 0) end
  if pending then error("the last run marker has no code block after it", 0) end
  return out
end

return M
