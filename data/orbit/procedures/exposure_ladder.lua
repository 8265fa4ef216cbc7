-- An exposure ladder: five frames from the configured exposure, each 1.5
-- times longer than the one before; the configured value is restored.

local CAM, EXPOSURE = 5, 1

function exposure_ladder()
  local base = param(CAM, EXPOSURE)
  if base <= 0 then
    base = 1000
  end
  local exposure = base
  wake()
  for _ = 1, 5 do
    set_param(CAM, EXPOSURE, exposure)
    if start_pipeline(1) then
      wait_until(function() return pipeline_status(1) ~= "running" end, 120)
    end
    tm(80, exposure)
    exposure = exposure * 1.5
  end
  suspend()
  set_param(CAM, EXPOSURE, base)
  return 5
end
