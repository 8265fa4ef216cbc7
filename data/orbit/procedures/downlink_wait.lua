-- Capture, then wait (up to 12 hours) for a ground station to come into
-- view and hand the product to the downlink pipeline there.

local COMM, IN_VIEW = 6, 1

function downlink_wait()
  wake()
  start_pipeline(1)
  wait_until(function() return pipeline_status(1) ~= "running" end, 120)
  suspend()
  if pipeline_status(1) ~= "ok" then
    return false
  end
  if not wait_until(function() return param(COMM, IN_VIEW) == 1 end, 43200) then
    tm(70, 0)
    return false
  end
  wake()
  start_pipeline(3)
  wait_until(function() return pipeline_status(3) ~= "running" end, 300)
  suspend()
  tm(71, now())
  return pipeline_status(3) == "ok"
end
