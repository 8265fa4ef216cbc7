-- Capture only when the battery can pay for it: below 40 % wait up to an
-- hour for the charge to come back, and give up otherwise.

local EPS, BATTERY = 2, 1

function power_budget()
  if not wait_until(function() return param(EPS, BATTERY) >= 40 end, 3600) then
    tm(30, param(EPS, BATTERY))
    return false
  end
  wake()
  local ok = start_pipeline(1)
  if ok then
    wait_until(function() return pipeline_status(1) ~= "running" end, 120)
  end
  suspend()
  tm(31, param(EPS, BATTERY))
  return ok
end
