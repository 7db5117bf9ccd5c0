// One deployment of the coordinator app: its own Flex Consumption plan (Linux, Node 22 or 24), host storage and
// least-privilege roles on it, and app settings that point it at the SHARED coordination account. main.bicep
// instantiates this once per entry of appRegions, after creating the app's user-assigned identity and giving it its
// roles on the coordination account through the shipped module (bicep/coordinator.bicep), whose settings come in as
// coordinatorSettings.
//
// No secret reaches the app: every connection is identity-based (`<PREFIX>__credential = managedidentity` plus the
// identity's client id), the storage accounts refuse shared keys, and Application Insights refuses key-only ingestion.

import { coordinatorAppSettings } from '../../bicep/coordinator.bicep'

@description('Function app name (globally unique, becomes <name>.azurewebsites.net or a regional default host name).')
param name string

@description('Azure region of this app, its plan, identity and host storage. Must offer Flex Consumption.')
param location string

@description('Tags applied to every resource of this app.')
param tags {*: string} = {}

@description('Tags of the Function App alone, on top of tags (azd finds the app to deploy to by its azd-service-name tag).')
param siteTags {*: string} = {}

@description('Flex Consumption plan name (one app per Flex plan).')
param planName string

@description('Name of the app\'s user-assigned managed identity (same resource group; main.bicep creates it).')
param identityName string

@description('The coordinator\'s settings for this app: bicep/coordinator.bicep\'s appSettings entry for its identity (the coordination account\'s endpoints, the identity, the containers and queues).')
param coordinatorSettings coordinatorAppSettings

@description('Name of this app\'s own host storage account (AzureWebJobsStorage + deployment package).')
param hostStorageName string

@description('Replication of the host storage account.')
param hostStorageSkuName string = 'Standard_LRS'

@description('Name of the shared Application Insights component (same resource group).')
param applicationInsightsName string

@description('Upper bound on instances Flex Consumption scales this app to.')
param maximumInstanceCount int

@description('Memory per instance in MB.')
param instanceMemoryMB int

@description('Node.js major version of the runtime (main.bicep restricts it to the supported ones).')
param nodeVersion string

// The coordinator's own settings, passed through from main.bicep where they are documented and validated.
param coordinatorSchedule string
param leaseBlob string
param leaseDurationSeconds int
param leaseRenewIntervalMs int
param leaseRenewDeadlineMs int
param leaseTakeoverDeadlineMs int
param leaseHeartbeatIntervalMs int
param leaderWatchIntervalMs int
param leaderSentinelSeconds int
param stepBudgetMs int
param activityWakeIntervalMs int
param dispatchBatchSize int
param workUnitMaxItems int
param workUnitConcurrency int
param workUnitMaxBytes int
param workUnitMaxBlobItems int
param workUnitSpread int
param maxAggregateGroups int
param maxInputBlobBytes int
param maxJobDocumentBytes int
param jobRetentionHours int
param stepStallTimeoutMs int
param flowGrantSeconds int

// Flex Consumption deploys the app package from a blob container in host storage, read with the app's identity.
var deploymentContainerName = 'deployment-package'

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' existing = {
  name: identityName
}

module hostStorage 'storageAccount.bicep' = {
  name: '${name}-host-storage'
  params: {
    name: hostStorageName
    location: location
    tags: tags
    skuName: hostStorageSkuName
    containerNames: [deploymentContainerName]
  }
}

module roles 'appRoles.bicep' = {
  name: '${name}-roles'
  params: {
    principalId: identity.properties.principalId
    hostStorageName: hostStorage.outputs.name
    applicationInsightsName: applicationInsightsName
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource plan 'Microsoft.Web/serverfarms@2025-03-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    tier: 'FlexConsumption'
    name: 'FC1'
  }
  properties: {
    // Linux.
    reserved: true
  }
}

resource site 'Microsoft.Web/sites@2025-03-01' = {
  name: name
  location: location
  tags: union(tags, siteTags)
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      minTlsVersion: '1.2'
    }
    // On Flex Consumption the runtime and its version live here, not in FUNCTIONS_WORKER_RUNTIME /
    // FUNCTIONS_EXTENSION_VERSION app settings (which Flex rejects).
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${hostStorage.outputs.blobEndpoint}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identity.id
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: {
        name: 'node'
        version: nodeVersion
      }
    }
  }
}

// Every app setting, in one resource. Keys fall in two groups (test/infra/settings.test.ts tells them apart by prefix):
// - host settings, read by the Functions host: AzureWebJobsStorage__*, APPLICATIONINSIGHTS_*, languageWorkers__*;
// - app settings, read by the code: exactly APP_SETTING_NAMES of src/app/settings.ts, the coordination account's
//   connection, containers and queues among them from coordinatorSettings (the shipped module's output).
// Deployed after the role assignments so the host's first start with these settings already has its permissions
// (RBAC can still take a few minutes to propagate; the host retries).
resource appSettings 'Microsoft.Web/sites/config@2025-03-01' = {
  parent: site
  name: 'appsettings'
  properties: union(coordinatorSettings, {
    // Host storage, identity-based: no AzureWebJobsStorage connection string exists.
    AzureWebJobsStorage__credential: 'managedidentity'
    AzureWebJobsStorage__clientId: identity.properties.clientId
    AzureWebJobsStorage__blobServiceUri: hostStorage.outputs.blobEndpoint
    // The host writes diagnostic events to table storage; without this URI (and Storage Table Data Contributor) it
    // cannot, as in the official Flex Consumption samples.
    AzureWebJobsStorage__tableServiceUri: hostStorage.outputs.tableEndpoint
    // Telemetry. The connection string names the component and its endpoint; with local auth off it is not a
    // credential: ingestion needs the identity's Entra token (Monitoring Metrics Publisher).
    APPLICATIONINSIGHTS_CONNECTION_STRING: applicationInsights.properties.ConnectionString
    APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identity.properties.clientId};Authorization=AAD'
    // No languageWorkers__node__arguments: the Node worker runs with Node's defaults, as the local host does
    // (NODE_WORKER_ARGUMENTS). Flex bills an instance's memory size, not its RSS (docs/how-to/tune-cost.md).
    // The coordinator's tuning (src/app/settings.ts); its connection "COORDINATION_STORAGE" (the worker's queue trigger
    // binds with connection: 'COORDINATION_STORAGE'; the code builds its clients from the same settings), containers
    // and queues come from coordinatorSettings.
    COORDINATOR_SCHEDULE: coordinatorSchedule
    LEASE_BLOB: leaseBlob
    LEASE_DURATION_SECONDS: string(leaseDurationSeconds)
    LEASE_RENEW_INTERVAL_MS: string(leaseRenewIntervalMs)
    LEASE_RENEW_DEADLINE_MS: string(leaseRenewDeadlineMs)
    LEASE_TAKEOVER_DEADLINE_MS: string(leaseTakeoverDeadlineMs)
    LEASE_HEARTBEAT_INTERVAL_MS: string(leaseHeartbeatIntervalMs)
    LEADER_WATCH_INTERVAL_MS: string(leaderWatchIntervalMs)
    LEADER_SENTINEL_SECONDS: string(leaderSentinelSeconds)
    STEP_BUDGET_MS: string(stepBudgetMs)
    ACTIVITY_WAKE_INTERVAL_MS: string(activityWakeIntervalMs)
    DISPATCH_BATCH_SIZE: string(dispatchBatchSize)
    WORK_UNIT_MAX_ITEMS: string(workUnitMaxItems)
    WORK_UNIT_CONCURRENCY: string(workUnitConcurrency)
    WORK_UNIT_MAX_BYTES: string(workUnitMaxBytes)
    WORK_UNIT_MAX_BLOB_ITEMS: string(workUnitMaxBlobItems)
    WORK_UNIT_SPREAD: string(workUnitSpread)
    MAX_AGGREGATE_GROUPS: string(maxAggregateGroups)
    MAX_INPUT_BLOB_BYTES: string(maxInputBlobBytes)
    MAX_JOB_DOCUMENT_BYTES: string(maxJobDocumentBytes)
    JOB_RETENTION_HOURS: string(jobRetentionHours)
    STEP_STALL_TIMEOUT_MS: string(stepStallTimeoutMs)
    FLOW_GRANT_SECONDS: string(flowGrantSeconds)
  })
  dependsOn: [
    roles
  ]
}

@description('Function app name.')
output name string = site.name

@description('Default host name of the app (where /api/jobs is served).')
output defaultHostName string = site.properties.defaultHostName

@description('Host storage account of this app.')
output hostStorageName string = hostStorage.outputs.name

@description('Client id of the app\'s managed identity.')
output identityClientId string = identity.properties.clientId

@description('Principal (object) id of the app\'s managed identity.')
output identityPrincipalId string = identity.properties.principalId
