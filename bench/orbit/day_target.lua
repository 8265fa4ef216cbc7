-- One target of bench_dish.c's power day: when the ground track enters
-- the box (within two orbits), wake the main processor for one capture.
-- tm 100: the box was missed; tm 101: the capture, 1 good, 0 failed.

function target(lat0, lat1, lon0, lon1)
  if not wait_until(function() return inside(lat0, lat1, lon0, lon1) end, 11280) then
    tm(100, 0)
    return false
  end
  wake()
  start_pipeline(1)
  wait_until(function() return pipeline_status(1) ~= "running" end, 120)
  suspend()
  local ok = pipeline_status(1) == "ok"
  tm(101, ok)
  return ok
end
