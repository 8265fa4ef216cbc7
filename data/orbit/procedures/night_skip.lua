-- Optical frames need daylight: on the night side wait for the sun (at
-- most one orbit), and skip the capture if it does not come.

local ADCS, SUNLIT = 3, 1

function night_skip()
  if param(ADCS, SUNLIT) == 0 then
    tm(50, now())
    if not wait_until(function() return param(ADCS, SUNLIT) == 1 end, 5700) then
      return false
    end
  end
  wake()
  start_pipeline(1)
  wait_until(function() return pipeline_status(1) ~= "running" end, 120)
  suspend()
  tm(51, now())
  return pipeline_status(1) == "ok"
end
