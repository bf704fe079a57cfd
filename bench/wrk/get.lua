-- Gets of COUNT existing objects in turn: wrk -s get.lua URL-of-a-collection -- PREFIX COUNT
-- (objects PREFIX-0 .. PREFIX-<COUNT-1>, created before the run).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")

local n = 0
local paths = {}

function init(args)
  local prefix, count = args[1] or "cm", tonumber(args[2] or "100")
  for i = 0, count - 1 do
    paths[i + 1] = wrk.path .. "/" .. prefix .. "-" .. i
  end
end

function request()
  n = n + 1
  return wrk.format("GET", paths[(n % #paths) + 1])
end
