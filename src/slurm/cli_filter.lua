-- cli_filter.lua -- aegis's filter for sbatch, salloc and srun (Slurm's
-- cli_filter/lua, docs/slurm.md): a job given spank_aegis.so's
-- --aegis-mem=MIB also asks Slurm for the count-only GRES aegis_mem:MIB,
-- so that a user gives the number once and Slurm counts it on the node.
--
-- Slurm runs it in the command, before the request leaves: it reads the
-- plugin's option as the command parsed it (options.spank) and adds to
-- the request's --gres, as if the user had typed it. A request that names
-- aegis_mem itself is left as it is. So is a step (srun inside a job):
-- it shares its job's lease, and the GRES is the job's.

local function aegis_mem(options)
    local spank = options.spank
    local plugin = spank and spank["aegis"]
    local mem = plugin and plugin["aegis-mem"]
    if mem == nil or mem == "" then return nil end
    return mem
end

function slurm_cli_setup_defaults(options, early)
    return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
    local mem = aegis_mem(options)
    if mem == nil or os.getenv("SLURM_JOB_ID") ~= nil then
        return slurm.SUCCESS
    end
    local gres = options.gres
    if gres == nil or gres == "(null)" then gres = "" end
    if string.find(gres, "aegis_mem", 1, true) then return slurm.SUCCESS end
    if gres ~= "" then gres = gres .. "," end
    options.gres = gres .. "aegis_mem:" .. mem
    return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
    return slurm.SUCCESS
end
