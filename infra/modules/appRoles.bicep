// Least-privilege role assignments for ONE app's user-assigned managed identity, on what is the app's own: its host
// storage and the Application Insights component. Its roles on the SHARED coordination account (containers, queues)
// are the shipped module's, bicep/coordinator.bicep, which main.bicep deploys for every app identity at once.
//
// Role definition ids are the built-in ones, the same in every Azure cloud; they are listed in
// https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/storage and
// https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/monitor .
// test/infra/roles.test.ts checks every id below against that list and that each line names its role.
//
// What is deliberately NOT granted:
// - Storage Account Contributor / Storage Queue Data Contributor on host storage: the Functions docs require them for
//   AzureWebJobsStorage only when the app has blob triggers; this app has timer, queue and HTTP triggers only.
//   (Table Data Contributor IS granted there: diagnostic events; see hostTableContributor.)
// - Any control-plane role (Contributor, Owner, key operator): the app never manages resources or reads keys.
var roleIds = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb' // Monitoring Metrics Publisher
}

@description('Principal (object) id of the app\'s user-assigned managed identity.')
param principalId string

@description('Name of this app\'s own host storage account (same resource group).')
param hostStorageName string

@description('Name of the Application Insights component (same resource group).')
param applicationInsightsName string

resource hostStorage 'Microsoft.Storage/storageAccounts@2026-06-01' existing = {
  name: hostStorageName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

// Storage Blob Data Owner on this app's OWN host storage only: what the Functions docs require for an
// identity-based AzureWebJobsStorage (host locks and timer schedule status in azure-webjobs-hosts, function keys in
// azure-webjobs-secrets) and what Flex Consumption needs to read the deployment package container. Granted per app,
// so no app can touch another app's host storage.
resource hostBlobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostStorage.id, principalId, roleIds.storageBlobDataOwner)
  scope: hostStorage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataOwner)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Functions host storage (AzureWebJobsStorage) and the Flex Consumption deployment package.'
  }
}

// Storage Table Data Contributor on this app's OWN host storage only: the Functions docs name Blob Data Owner as the
// host's minimum but note that it does not cover diagnostic events, which the host writes to table storage
// (AzureWebJobsStorage__tableServiceUri); the official Flex Consumption samples grant this role for the same reason.
resource hostTableContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostStorage.id, principalId, roleIds.storageTableDataContributor)
  scope: hostStorage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageTableDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Functions host diagnostic events (table storage in AzureWebJobsStorage).'
  }
}

// Monitoring Metrics Publisher on the Application Insights component: with local auth disabled, this is the role
// that lets the identity send telemetry (Microsoft.Insights/Telemetry/Write). It grants no read access to the data.
resource telemetryPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, principalId, roleIds.monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.monitoringMetricsPublisher)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Entra ID-authenticated telemetry ingestion (Application Insights local auth is off).'
  }
}
