-- Creates with unique names: wrk -s create.lua URL-of-a-collection -- KIND PREFIX
-- KIND: configmap (~300 bytes, as bench/hub.py's payload) or deployment (apps/v1, one container).
-- Each thread counts its own requests; names are PREFIX-<thread>-<n>, so no two collide.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")

local n = 0
local kind, prefix
local filler = string.rep("x", 200)

function init(args)
  kind = args[1] or "configmap"
  prefix = args[2] or "bench"
end

local function configmap(name)
  return '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' .. name ..
    '","labels":{"bench":"yes","n":"' .. (n % 10) .. '"}},"data":{"key":"' .. filler ..
    '","index":"' .. n .. '"}}'
end

local function deployment(name)
  return '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"' .. name ..
    '","labels":{"app":"' .. name .. '","bench":"yes"}},"spec":{"replicas":3,' ..
    '"selector":{"matchLabels":{"app":"' .. name .. '"}},' ..
    '"template":{"metadata":{"labels":{"app":"' .. name .. '"}},"spec":{"containers":[{' ..
    '"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"protocol":"TCP"}],' ..
    '"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}}'
end

function request()
  n = n + 1
  local name = prefix .. "-" .. tid .. "-" .. n
  local body = kind == "deployment" and deployment(name) or configmap(name)
  return wrk.format("POST", nil, nil, body)
end
