// A hardened StorageV2 account with the blob containers and queues its users need, created at deploy time so that
// nothing in production depends on creating them at run time.
//
// Used twice: once for the ONE coordination account that every app shares (lease, state, inputs, work and result
// queues), and once per app for its host storage (AzureWebJobsStorage and the Flex Consumption deployment package).
// Every account is reached with Microsoft Entra ID only: shared keys are off, so there is no key to leak or rotate.

@description('Storage account name: 3-24 lowercase letters and digits, globally unique.')
@minLength(3)
@maxLength(24)
param name string

@description('Azure region of the account.')
param location string

@description('Tags applied to the account.')
param tags {*: string} = {}

@description('Replication. LRS is the cheapest; ZRS survives a zone outage where the region has zones.')
@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
])
param skuName string = 'Standard_LRS'

@description('Blob containers to create (private).')
param containerNames string[] = []

@description('Queues to create.')
param queueNames string[] = []

@description('Days a deleted blob or container (and the previous content of an overwritten blob) stays recoverable; null (the default) turns soft delete off.')
@minValue(1)
@maxValue(365)
param deleteRetentionDays int?

resource account 'Microsoft.Storage/storageAccounts@2026-06-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: skuName
  }
  properties: {
    accessTier: 'Hot'
    // Entra ID only: no account keys, no SAS signed with them. The portal also defaults to Entra ID.
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    // No anonymous reads of any container, whatever a container's own setting says.
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    // Flex Consumption apps without a virtual network reach storage over its public endpoint; access is still
    // authorized per request by Entra ID and RBAC. Put the apps in a VNet and add private endpoints to close it.
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
  }
}

// Soft delete: a blob or container deleted by mistake (or by a buggy or compromised client) can be restored within
// the retention period (az storage blob undelete / az storage container restore). Without it, deleting the lease
// container would silently reset leadership and lose the coordinator's state.
resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2026-06-01' = {
  parent: account
  name: 'default'
  properties: {
    deleteRetentionPolicy: deleteRetentionDays == null ? { enabled: false } : { enabled: true, days: deleteRetentionDays }
    containerDeleteRetentionPolicy: deleteRetentionDays == null
      ? { enabled: false }
      : { enabled: true, days: deleteRetentionDays }
  }
}

resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = [
  for containerName in containerNames: {
    parent: blobService
    name: containerName
    properties: {
      publicAccess: 'None'
    }
  }
]

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2026-06-01' = {
  parent: account
  name: 'default'
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2026-06-01' = [
  for queueName in queueNames: {
    parent: queueService
    name: queueName
  }
]

@description('Name of the account.')
output name string = account.name

@description('Resource id of the account.')
output id string = account.id

@description('Blob service endpoint, e.g. https://<name>.blob.core.windows.net/ (ends with a slash).')
output blobEndpoint string = account.properties.primaryEndpoints.blob

@description('Queue service endpoint, e.g. https://<name>.queue.core.windows.net/ (ends with a slash).')
output queueEndpoint string = account.properties.primaryEndpoints.queue

@description('Table service endpoint, e.g. https://<name>.table.core.windows.net/ (ends with a slash).')
output tableEndpoint string = account.properties.primaryEndpoints.table
