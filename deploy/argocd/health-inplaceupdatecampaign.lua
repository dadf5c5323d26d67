-- Argo CD health check of an InPlaceUpdateCampaign (inplace.cluster.x-k8s.io), for argocd-cm
-- resource.customizations.health.inplace.cluster.x-k8s.io_InPlaceUpdateCampaign (docs/operations.md, "GitOps: Argo CD
-- and Flux"). Lua 5.1; reads only what the campaign controller writes: status.observedGeneration, status.updateStatus and
-- the Ready, Stalled, Failed and Paused conditions (Failed and updateStatus answer for a status written before Stalled).
local hs = { status = "Progressing", message = "waiting for the campaign controller to report" }

local function condition(t)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == t then
      return c
    end
  end
  return nil
end

local function isTrue(c)
  return c ~= nil and c.status == "True"
end

-- "Reason: message" of a condition, or `fallback` without one.
local function say(c, fallback)
  if c == nil then
    return fallback
  end
  local m = c.reason or fallback
  if c.message ~= nil and c.message ~= "" then
    m = m .. ": " .. c.message
  end
  return m
end

if obj.status == nil then
  return hs
end
-- A status of an older generation says nothing about the spec Argo CD just applied (a pause, a resume).
if obj.metadata ~= nil and obj.metadata.generation ~= nil and obj.status.observedGeneration ~= nil
    and obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "the campaign controller has not observed generation " .. tostring(obj.metadata.generation) .. " yet"
  return hs
end

local u = obj.status.updateStatus
local ready = condition("Ready")
if isTrue(ready) then
  hs.status = "Healthy"
  hs.message = say(ready, "updated")
  return hs
end
-- Halted (a canary failed, the failure budget spent), invalid, or aborted: it needs a person.
local stalled = condition("Stalled")
local failed = condition("Failed")
if isTrue(stalled) or isTrue(failed) or u == "failed" or u == "aborted" then
  hs.status = "Degraded"
  if isTrue(stalled) then
    hs.message = say(stalled, u)
  elseif isTrue(failed) then
    hs.message = say(failed, u)
  else
    hs.message = say(ready, u)
  end
  return hs
end
-- Paused by the operator (spec.paused): no new cluster starts until someone resumes it. An aborting campaign still moves.
if isTrue(condition("Paused")) and u ~= "aborting" then
  hs.status = "Suspended"
  hs.message = say(ready, "paused")
  return hs
end
-- Pending, canary, waves, soaking, aborting, or waiting on a window or another plan: it moves on by itself.
hs.message = say(ready, u or "pending")
return hs
