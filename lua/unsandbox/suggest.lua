--- "Did you mean": the candidates nearest a word that is not one of
-- them, for the messages that name an unknown language, command or
-- option. Near is at most a third of the word's letters edited
-- (Damerau-Levenshtein: an insertion, a deletion, a change, or two
-- neighbours swapped), compared without case. Internal module.
local M = {}

-- The edit distance of a and b (optimal string alignment).
local function distance(a, b)
  local la, lb = #a, #b
  local d = {}
  for i = 0, la do d[i] = { [0] = i } end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    for j = 1, lb do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[la][lb]
end
M.distance = distance

--- The candidates (a list of strings) nearest word, best first, at most
-- three; an empty list when none is near.
function M.near(word, candidates)
  local w = word:lower()
  local limit = math.max(1, math.floor(#w / 3))
  local found = {}
  for _, c in ipairs(candidates) do
    local d = distance(w, c:lower())
    if d <= limit then found[#found + 1] = { c, d } end
  end
  table.sort(found, function(x, y) return x[2] < y[2] or (x[2] == y[2] and x[1] < y[1]) end)
  local out = {}
  for i = 1, math.min(3, #found) do out[i] = found[i][1] end
  return out
end

--- " (did you mean 'x'?)" or " (did you mean 'x' or 'y'?)", or "".
function M.phrase(word, candidates)
  local near = M.near(word, candidates)
  if #near == 0 then return "" end
  for i, n in ipairs(near) do near[i] = "'" .. n .. "'" end
  local last = table.remove(near)
  local text = #near > 0 and table.concat(near, ", ") .. " or " .. last or last
  return " (did you mean " .. text .. "?)"
end

return M
