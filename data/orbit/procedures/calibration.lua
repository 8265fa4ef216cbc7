-- Four dark frames for the sensor's calibration, on the night side, with
-- the camera in dark mode; the previous mode is put back afterwards.

local ADCS, SUNLIT, CAM, MODE, DARK = 3, 1, 5, 3, 1

function calibration()
  if not wait_until(function() return param(ADCS, SUNLIT) == 0 end, 5700) then
    return 0
  end
  local mode = param(CAM, MODE)
  set_param(CAM, MODE, DARK)
  wake()
  local good = 0
  for _ = 1, 4 do
    if start_pipeline(2) then
      wait_until(function() return pipeline_status(2) ~= "running" end, 120)
      if pipeline_status(2) == "ok" then
        good = good + 1
      end
    end
  end
  suspend()
  set_param(CAM, MODE, mode)
  tm(60, good)
  return good
end
