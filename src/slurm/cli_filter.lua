-- cli_filter.lua -- aegis's filter for sbatch, salloc and srun (Slurm's
-- cli_filter/lua, docs/slurm.md): a job given spank_aegis.so's
-- --aegis-mem=MIB also asks Slurm for the count-only GRES aegis_mem:MIB,
-- so that a user gives the number once and Slurm counts it on the node.
--
-- Slurm runs it in the command, before the request leaves: it reads the
-- plugin's option as the command parsed it (options.spank) and adds to
-- the request's --gres, as if the user had typed it. A request that names
-- aegis_mem itself is left as it is. So is a step (srun inside a job):
-- it shares its job's lease, and the GRES is the job's. A job submitted
-- from inside another (sbatch or salloc in a batch script) is a job of
-- its own, with a lease of its own: it gets the GRES.

local function aegis_opt(options, name)
    local spank = options.spank
    local plugin = spank and spank["aegis"]
    local value = plugin and plugin[name]
    if value == nil or value == "" then return nil end
    return value
end

-- A step is an srun given a job to run in (options.jobid: from
-- SLURM_JOB_ID inside an allocation, or --jobid). An srun outside one,
-- and every sbatch and salloc, wherever they run, make a job.
local function is_step(options)
    local jobid = options.jobid
    return options.type == "srun" and jobid ~= nil and jobid ~= "" and
        jobid ~= "0"
end

-- More than one task per node may be asked: they all share the job's one
-- GPU and --aegis-mem on a node (it is not each task's), so say so.
local function several_tasks(options)
    local ntasks = tonumber(options.ntasks) or 1
    local per_node = tonumber(options["ntasks-per-node"]) or 0
    return ntasks > 1 or per_node > 1
end

local function warn(text)
    io.stderr:write("aegis: " .. text .. "\n")
end

function slurm_cli_setup_defaults(options, early)
    return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
    local mem = aegis_opt(options, "aegis-mem")
    if mem == nil then
        if aegis_opt(options, "aegis-mode") ~= nil then
            warn("--aegis-mode without --aegis-mem is ignored: only a " ..
                 "job given --aegis-mem asks aegisd for a GPU")
        end
        return slurm.SUCCESS
    end
    if several_tasks(options) then
        warn("--aegis-mem=" .. mem .. " is the GPU memory of the job on " ..
             "each node, on one GPU that its tasks there share, not each " ..
             "task's")
    end
    if is_step(options) then return slurm.SUCCESS end
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
