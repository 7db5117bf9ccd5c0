// Azure infrastructure for the leader-elected coordinator (resource-group scope).
//
//   az group create -n <rg> -l <region>
//   az deployment group create -g <rg> -f infra/main.bicep -p infra/main.bicepparam
//
// Deploys ONE coordination storage account (lease, state, inputs, queues), ONE Log Analytics workspace with
// Application Insights, and for every entry of appRegions one Function App on its own Flex Consumption plan with its
// own managed identity and host storage. All apps point at the same coordination account, so they race for the same
// blob lease: whichever app holds it runs the coordination step, the others only run workers. Inside one app the
// Functions host already runs a timer on one instance at a time; across apps (regions) only the lease keeps a single
// coordinator. See docs/contributing/deploy-this-repository.md.
//
// The coordination account's containers, queues and the apps' roles on them come from the module the package ships
// for users' own apps (bicep/coordinator.bicep), so this deployment proves it by use.
//
// Checked in CI by the Bicep compiler itself (npm run infra:check: build, build-params, lint with bicepconfig.json's
// rules, zero warnings) and by test/infra on what it compiles: resources, API versions, hardening, no keys, roles and
// their scopes, and that the app settings are exactly the names src/app/settings.ts reads.

targetScope = 'resourceGroup'

@description('Short prefix of every resource name, 3-10 characters. Only its letters and digits are used, in lowercase (storage account names allow nothing else): \'My-App\' names resources like \'myapp\'.')
@minLength(3)
@maxLength(10)
param namePrefix string = 'leader'

@description('Regions to deploy one app into each; several entries share ONE coordination account and ONE leader. Repeat a region to run several apps there. Each must offer Flex Consumption (az functionapp list-flexconsumption-locations). Programmatic (\'swedencentral\') or display names (\'Sweden Central\') both work.')
@minLength(1)
@maxLength(10)
param appRegions string[] = [
  resourceGroup().location
]

@description('Region of the coordination storage account and of Log Analytics / Application Insights.')
param coordinationLocation string = resourceGroup().location

@description('Replication of the coordination account. Every app depends on it; ZRS survives a zone outage where the region has zones.')
@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
])
param coordinationStorageSkuName string = 'Standard_LRS'

@description('Days deleted blobs and containers of the coordination account stay recoverable (soft delete): the lease container, the coordinator\'s state and the inputs.')
@minValue(1)
@maxValue(365)
param coordinationSoftDeleteDays int = 7

@description('Upper bound on instances each app scales to (Flex Consumption; bounds as in the official Flex samples).')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 40

@description('Memory per instance in MB (Flex Consumption instance size).')
@allowed([
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Node.js major version of every app (Flex Consumption runtime). 22 is the floor the code declares (package.json engines) and the one CI tests; 24 is the other GA version.')
@allowed([
  '22'
  '24'
])
param nodeVersion string = '22'

@description('Days Log Analytics keeps data.')
@minValue(30)
@maxValue(730)
param logRetentionInDays int = 30

@description('Tags applied to every resource.')
param tags {*: string} = {}

// ---- Operations: alerts, the deployer's data-plane access, azd (docs/how-to/operate.md, docs/contributing/deploy-this-repository.md). ----

@description('E-mail address the alerts go to (an action group is created for it). Empty: the alert rules still fire in Azure Monitor, but notify nobody.')
param alertEmail string = ''

@description('Minutes without a completed coordination step, while jobs run or items wait, before the "stalled" alert fires.')
@minValue(5)
@maxValue(1440)
param noStepAlertMinutes int = 10

@description('Leader changes in one hour above which the "flapping" alert fires (wake-ups hand the lease between instances in normal operation).')
@minValue(1)
@maxValue(10000)
param leaderChangesPerHourAlert int = 60

@description('Object id of the deployer (you, or a pipeline), given the data-plane roles to upload job inputs and run npm run enqueue against the deployed account. Empty: no such roles. azd sets it to the signed-in user.')
param deployerPrincipalId string = ''

@description('What kind of principal deployerPrincipalId is.')
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param deployerPrincipalType string = 'User'

@description('azd only (infra/azd.bicep sets it): the azure.yaml service name, tagged on the first app so azd deploy finds it. azd deploys one app: keep appRegions to one entry.')
param azdServiceName string = ''

// ---- Settings read by the app (src/app/settings.ts). Defaults equal the code's defaults (a test checks). ----

@description('COORDINATOR_SCHEDULE: NCRONTAB with seconds of the coordinator timer, the heartbeat (submissions wake the coordinator through WAKE_QUEUE). Idle cost per schedule: docs/how-to/tune-cost.md#the-idle-timer.')
param coordinatorSchedule string = '0 * * * * *'

@description('LEASE_CONTAINER: container of the leader lease blob (created here).')
@minLength(3)
@maxLength(63)
param leaseContainer string = 'leases'

@description('LEASE_BLOB: name of the leader lease blob in LEASE_CONTAINER. ARM cannot create blobs: the app creates it if missing.')
param leaseBlob string = 'MyLeaderCoordinatorTask'

@description('LEASE_DURATION_SECONDS: blob lease duration (Azure allows 15-60).')
@minValue(15)
@maxValue(60)
param leaseDurationSeconds int = 15

@description('LEASE_RENEW_INTERVAL_MS: how often the leader renews; below LEASE_RENEW_DEADLINE_MS.')
@minValue(500)
@maxValue(59000)
param leaseRenewIntervalMs int = 3000

@description('LEASE_RENEW_DEADLINE_MS: the leader stops if it could not renew for this long; at most 90 % of the lease duration, so a leader whose clock runs 10 % slow still stops before its lease can expire.')
@minValue(1000)
@maxValue(54000)
param leaseRenewDeadlineMs int = 10000

@description('LEASE_TAKEOVER_DEADLINE_MS: takeover below the lease (docs/explanation/failover.md): the leader stops when no heartbeat has succeeded for this long, and another instance that saw it silent for longer breaks its lease and takes over. Above LEASE_HEARTBEAT_INTERVAL_MS, below LEASE_RENEW_DEADLINE_MS; 0 turns takeover off.')
@minValue(0)
@maxValue(53000)
param leaseTakeoverDeadlineMs int = 2500

@description('LEASE_HEARTBEAT_INTERVAL_MS: how often the leader heartbeats (one storage operation) while takeover is on; below LEASE_TAKEOVER_DEADLINE_MS.')
@minValue(100)
@maxValue(53000)
param leaseHeartbeatIntervalMs int = 1000

@description('LEADER_WATCH_INTERVAL_MS: with takeover, how often a process that ran a worker or wake-up invocation in the last three lease durations reads the lease to notice a silent leader; 0 (off) or 250-60000.')
@minValue(0)
@maxValue(60000)
param leaderWatchIntervalMs int = 1000

@description('LEADER_SENTINEL_SECONDS: while its step has active jobs, the leader keeps one wake-up hidden this long on WAKE_QUEUE (hidden again every half of it), so a dead leader is noticed even when no other instance is busy; 0 (off) to 60.')
@minValue(0)
@maxValue(60)
param leaderSentinelSeconds int = 2

@description('STATE_CONTAINER: container of the coordinator\'s fenced state (created here).')
@minLength(3)
@maxLength(63)
param stateContainer string = 'coordinator-state'

@description('INPUT_CONTAINER: container of job input blobs (created here). The app can only read it, so it must differ from LEASE_CONTAINER, STATE_CONTAINER and SYSTEM_CONTAINER (the app refuses to start otherwise).')
@minLength(3)
@maxLength(63)
param inputContainer string = 'job-inputs'

@description('SYSTEM_CONTAINER: container of what the app itself writes besides its state (created here; the app may write only here, in LEASE_CONTAINER and in STATE_CONTAINER).')
@minLength(3)
@maxLength(63)
param systemContainer string = 'coordinator-system'

@description('WORK_QUEUE: queue of work items; it and <name>-poison are created here. At most 56 characters, so <name>-poison is a valid queue name; it and its poison queue must differ from RESULTS_QUEUE, WAKE_QUEUE and theirs.')
@minLength(3)
@maxLength(56)
param workQueue string = 'work-items'

@description('RESULTS_QUEUE: queue of worker results; it and <name>-poison are created here. At most 56 characters, so <name>-poison is a valid queue name; it and its poison queue must differ from WORK_QUEUE, WAKE_QUEUE and theirs.')
@minLength(3)
@maxLength(56)
param resultsQueue string = 'work-results'

@description('WAKE_QUEUE: control queue of wake-ups (one per submission; the wake function makes one leadership attempt for each). Created here; a wake-up is never poisoned, so it has no <name>-poison queue. Must differ from WORK_QUEUE, RESULTS_QUEUE and their poison queues.')
@minLength(3)
@maxLength(63)
param wakeQueue string = 'coordinator-wake'

@description('STEP_BUDGET_MS: time budget of one coordination step; shorter than the timer tick.')
@minValue(1000)
@maxValue(600000)
param stepBudgetMs int = 20000

@description('ACTIVITY_WAKE_INTERVAL_MS: a worker that sent a result wakes the coordinator at most this often per process, and a wake-up that found the lease held sends one follow-up a lease duration later (at most this often per process); 0 turns both off.')
@minValue(0)
@maxValue(600000)
param activityWakeIntervalMs int = 5000

@description('DISPATCH_BATCH_SIZE: most items the leader dispatches per pass of its step; twice this may be in flight per job.')
@minValue(1)
@maxValue(10000)
param dispatchBatchSize int = 8192

@description('WORK_UNIT_MAX_ITEMS: most items one work message (a unit) carries; 1 sends one item per message. A job\'s units carry as many inline items as fit WORK_UNIT_MAX_BYTES up to this, fewer for a small job or one naming blobs.')
@minValue(1)
@maxValue(1000)
param workUnitMaxItems int = 1000

@description('WORK_UNIT_MAX_BLOB_ITEMS: most items one work message carries when its job names input blobs.')
@minValue(1)
@maxValue(1000)
param workUnitMaxBlobItems int = 32

@description('WORK_UNIT_SPREAD: units a job\'s in-flight window (its items, or twice DISPATCH_BATCH_SIZE if fewer) is cut into.')
@minValue(1)
@maxValue(1000)
param workUnitSpread int = 16

@description('WORK_UNIT_CONCURRENCY: items of one work unit a worker processes at once, for task kinds that set none.')
@minValue(1)
@maxValue(64)
param workUnitConcurrency int = 1

@description('WORK_UNIT_MAX_BYTES: most bytes of JSON in one work message (its base64 form must fit a 64 KiB queue message).')
@minValue(1024)
@maxValue(48128)
param workUnitMaxBytes int = 46080

@description('MAX_AGGREGATE_GROUPS: most groups a job\'s aggregate may hold; a job that would exceed it ends as failed with the reason.')
@minValue(1)
@maxValue(2000000)
param maxAggregateGroups int = 200000

@description('MAX_INPUT_BLOB_BYTES: most bytes of an input blob a worker reads; an item naming a larger one fails with its size and the limit. The default suits instanceMemoryMB 2048 (24 concurrent work units at the limit); raise it with 4096.')
@minValue(1024)
@maxValue(268435456)
param maxInputBlobBytes int = 4194304

@description('MAX_JOB_DOCUMENT_BYTES: most bytes of JSON a job\'s stored document may have; a job whose aggregate would make it larger ends as failed with the reason.')
@minValue(1048576)
@maxValue(67108864)
param maxJobDocumentBytes int = 16777216

@description('JOB_RETENTION_HOURS: how long an ended job is kept; then the leader removes its state and blobs, and its status answers 404.')
@minValue(1)
@maxValue(8760)
param jobRetentionHours int = 168

@description('STEP_STALL_TIMEOUT_MS: the leader gives up leadership when its step makes no progress for this long.')
@minValue(1000)
@maxValue(3600000)
param stepStallTimeoutMs int = 60000

@description('FLOW_GRANT_SECONDS: how long a unit\'s grant under a limit lasts; a unit whose process died holds its shares this long.')
@minValue(30)
@maxValue(3600)
param flowGrantSeconds int = 600

// Names may only contain what every resource type's naming rule allows; a storage account takes nothing but 3-24
// lowercase letters and digits. So the prefix and the regions are reduced to their lowercase letters and digits before
// they go into any name ('My-App' -> 'myapp', 'Sweden Central' -> 'swedencentral', which is also the region's
// programmatic name). test/infra/names.test.ts checks every generated name against its type's rule.
func nameToken(text string) string => join(filter(map(range(0, length(text)), i => toLower(substring(text, i, 1))), c => contains('abcdefghijklmnopqrstuvwxyz0123456789', c)), '')

// A prefix with no letter or digit at all would leave names like 'func--…'.
var prefix = empty(nameToken(namePrefix)) ? 'app' : nameToken(namePrefix)
var token = uniqueString(resourceGroup().id, prefix)
var coordinationStorageName = 'st${prefix}co${take(token, 8)}'

module coordinationStorage 'modules/storageAccount.bicep' = {
  name: 'coordination-storage'
  params: {
    name: coordinationStorageName
    location: coordinationLocation
    tags: tags
    skuName: coordinationStorageSkuName
    deleteRetentionDays: coordinationSoftDeleteDays
  }
}

// One user-assigned identity per app, created before the apps: the coordinator module grants them their roles on the
// coordination account, and each app gets the settings the module outputs for its identity.
resource identities 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = [
  for (region, i) in appRegions: {
    name: 'id-${prefix}-${nameToken(region)}-${i}-${take(token, 6)}'
    location: nameToken(region)
    tags: tags
  }
]

// The containers and queues of the coordination account, the apps' roles on them, and their settings: the module the
// package ships for users' apps (docs/how-to/deploy.md).
module coordinator '../bicep/coordinator.bicep' = {
  name: 'coordinator'
  params: {
    storageAccountName: coordinationStorage.outputs.name
    apps: [
      for (region, i) in appRegions: {
        principalId: identities[i].properties.principalId
        clientId: identities[i].properties.clientId
      }
    ]
    leaseContainer: leaseContainer
    stateContainer: stateContainer
    inputContainer: inputContainer
    systemContainer: systemContainer
    workQueue: workQueue
    resultsQueue: resultsQueue
    wakeQueue: wakeQueue
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    workspaceName: 'log-${prefix}-${take(token, 6)}'
    applicationInsightsName: 'appi-${prefix}-${take(token, 6)}'
    location: coordinationLocation
    tags: tags
    retentionInDays: logRetentionInDays
  }
}

module apps 'modules/functionApp.bicep' = [
  for (region, i) in appRegions: {
    name: 'app-${i}-${nameToken(region)}'
    params: {
      name: 'func-${prefix}-${nameToken(region)}-${i}-${take(token, 6)}'
      location: nameToken(region)
      tags: tags
      planName: 'plan-${prefix}-${nameToken(region)}-${i}-${take(token, 6)}'
      identityName: identities[i].name
      coordinatorSettings: coordinator.outputs.appSettings[i]
      hostStorageName: 'st${prefix}h${i}${take(uniqueString(resourceGroup().id, prefix, nameToken(region), string(i)), 8)}'
      siteTags: i == 0 && !empty(azdServiceName) ? { 'azd-service-name': azdServiceName } : {}
      applicationInsightsName: monitoring.outputs.applicationInsightsName
      maximumInstanceCount: maximumInstanceCount
      instanceMemoryMB: instanceMemoryMB
      nodeVersion: nodeVersion
      coordinatorSchedule: coordinatorSchedule
      leaseBlob: leaseBlob
      leaseDurationSeconds: leaseDurationSeconds
      leaseRenewIntervalMs: leaseRenewIntervalMs
      leaseRenewDeadlineMs: leaseRenewDeadlineMs
      leaseTakeoverDeadlineMs: leaseTakeoverDeadlineMs
      leaseHeartbeatIntervalMs: leaseHeartbeatIntervalMs
      leaderWatchIntervalMs: leaderWatchIntervalMs
      leaderSentinelSeconds: leaderSentinelSeconds
      stepBudgetMs: stepBudgetMs
      activityWakeIntervalMs: activityWakeIntervalMs
      dispatchBatchSize: dispatchBatchSize
      workUnitMaxItems: workUnitMaxItems
      workUnitConcurrency: workUnitConcurrency
      workUnitMaxBytes: workUnitMaxBytes
      workUnitMaxBlobItems: workUnitMaxBlobItems
      workUnitSpread: workUnitSpread
      maxAggregateGroups: maxAggregateGroups
      maxInputBlobBytes: maxInputBlobBytes
      maxJobDocumentBytes: maxJobDocumentBytes
      jobRetentionHours: jobRetentionHours
      stepStallTimeoutMs: stepStallTimeoutMs
      flowGrantSeconds: flowGrantSeconds
    }
  }
]

module alerts 'modules/alerts.bicep' = {
  name: 'alerts'
  params: {
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    location: coordinationLocation
    tags: tags
    alertEmail: alertEmail
    noStepMinutes: noStepAlertMinutes
    leaderChangesPerHour: leaderChangesPerHourAlert
  }
}

module workbook 'modules/workbook.bicep' = {
  name: 'workbook'
  params: {
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    location: coordinationLocation
    tags: tags
  }
}

module deployerRoles 'modules/deployerRoles.bicep' = if (!empty(deployerPrincipalId)) {
  name: 'deployer-roles'
  params: {
    principalId: deployerPrincipalId
    principalType: deployerPrincipalType
    coordinationStorageName: coordinationStorage.outputs.name
    inputContainerName: inputContainer
    systemContainerName: systemContainer
    stateContainerName: stateContainer
    wakeQueueName: wakeQueue
  }
}

@description('Function app names, one per entry of appRegions (pass one to func azure functionapp publish and infra/smoke.sh).')
output appNames string[] = [for (region, i) in appRegions: apps[i].outputs.name]

@description('Default host names of the apps, in the same order.')
output appHostNames string[] = [for (region, i) in appRegions: apps[i].outputs.defaultHostName]

@description('Host storage accounts of the apps, in the same order.')
output hostStorageAccountNames string[] = [for (region, i) in appRegions: apps[i].outputs.hostStorageName]

@description('The one coordination storage account every app shares.')
output coordinationStorageAccountName string = coordinationStorage.outputs.name

@description('Blob endpoint of the coordination account.')
output coordinationBlobEndpoint string = coordinationStorage.outputs.blobEndpoint

@description('Queue endpoint of the coordination account.')
output coordinationQueueEndpoint string = coordinationStorage.outputs.queueEndpoint

@description('Application Insights component that receives every app\'s telemetry.')
output applicationInsightsName string = monitoring.outputs.applicationInsightsName

@description('Alert rules on the coordinator\'s telemetry (docs/how-to/operate.md, "Alerts").')
output alertRuleNames string[] = alerts.outputs.alertRuleNames
