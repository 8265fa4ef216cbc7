-- Capture one scene when the ground track enters a box over the Alps.

local function capture(pipeline)
  wake()
  local ok = false
  if start_pipeline(pipeline) then
    wait_until(function() return pipeline_status(pipeline) ~= "running" end, 120)
    ok = pipeline_status(pipeline) == "ok"
  end
  suspend()
  return ok
end

function capture_region()
  if not wait_until(function() return inside(45.5, 47.5, 6.0, 11.0) end, 7200) then
    tm(1, 0)
    return false
  end
  local ok = capture(1)
  tm(2, ok)
  return ok
end
