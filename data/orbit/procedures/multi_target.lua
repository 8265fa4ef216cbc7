-- One pass, three targets along the track: each gets a frame if the
-- ground track reaches its box in time; the count of frames is returned.

local function shoot(lat0, lat1, lon0, lon1)
  if not wait_until(function() return inside(lat0, lat1, lon0, lon1) end, 6000) then
    return 0
  end
  wake()
  start_pipeline(1)
  wait_until(function() return pipeline_status(1) ~= "running" end, 120)
  suspend()
  return pipeline_status(1) == "ok" and 1 or 0
end

function multi_target()
  local n = shoot(-10.0, 10.0, -180.0, 180.0)
  n = n + shoot(30.0, 60.0, -180.0, 180.0)
  n = n + shoot(60.0, 85.0, -180.0, 180.0)
  tm(90, n)
  return n
end
