-- Wait for a GNSS fix (the clock is set from it), then capture and report
-- where the frame was taken, in hundredths of a degree.

function fix_then_capture()
  if not wait_until(has_fix, 600) then
    tm(40, 0)
    return false
  end
  local lat, lon = position()
  wake()
  start_pipeline(1)
  wait_until(function() return pipeline_status(1) ~= "running" end, 120)
  suspend()
  tm(41, lat * 100)
  tm(42, lon * 100)
  return pipeline_status(1) == "ok"
end
