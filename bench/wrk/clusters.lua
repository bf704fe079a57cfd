-- Logical clusters made on first use: wrk -s clusters.lua URL-of-the-hub -- PREFIX
-- Each request is a GET of /clusters/PREFIX-<thread>-<n>/api/v1/namespaces/default, a name no
-- other request uses, so each one answered 200 is a new LogicalCluster and its namespaces.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")

local n = 0
local prefix

function init(args)
  prefix = args[1] or "bench"
end

function request()
  n = n + 1
  return wrk.format("GET", "/clusters/" .. prefix .. "-" .. tid .. "-" .. n .. "/api/v1/namespaces/default")
end
