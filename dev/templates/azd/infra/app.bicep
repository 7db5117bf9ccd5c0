// Your Function app on Flex Consumption, with the coordinator's storage, roles and settings from the package.
targetScope = 'resourceGroup'

@description('Name of the Function app (globally unique).')
param appName string

@description('Region of every resource; it must offer Flex Consumption.')
param location string = resourceGroup().location

@description('Tags of the Function app (azd finds the app by its azd-service-name tag).')
param tags object = {}

var token = take(uniqueString(resourceGroup().id, appName), 8)

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = {
  name: 'id-${appName}'
  location: location
}

// The coordination account: the lease, state, inputs and queues of the coordinator. Entra ID only, no keys.
resource coordination 'Microsoft.Storage/storageAccounts@2026-06-01' = {
  name: 'stco${token}'
  location: location
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

// The app's own host storage (AzureWebJobsStorage) and its deployment package.
resource host 'Microsoft.Storage/storageAccounts@2026-06-01' = {
  name: 'sthost${token}'
  location: location
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource hostBlobs 'Microsoft.Storage/storageAccounts/blobServices@2026-06-01' = {
  parent: host
  name: 'default'
}

resource packages 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = {
  parent: hostBlobs
  name: 'deployment-package'
}

// Storage Blob Data Owner and Storage Table Data Contributor on the host storage: what an identity-based
// AzureWebJobsStorage and the Flex Consumption deployment need.
resource hostRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in ['b7e6dc6d-f1e8-4753-8033-0f276bb0955b', '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3']: {
    name: guid(host.id, identity.id, role)
    scope: host
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
      principalId: identity.properties.principalId
      principalType: 'ServicePrincipal'
    }
  }
]

// The coordinator: its containers and queues in the coordination account, the identity's roles on them, the settings.
module coordinator '../node_modules/azure-leader-coordinator/bicep/coordinator.bicep' = {
  name: 'coordinator'
  params: {
    storageAccountName: coordination.name
    apps: [
      {
        principalId: identity.properties.principalId
        clientId: identity.properties.clientId
      }
    ]
    // The containers your task kinds write (Storage Blob Data Contributor there, nothing broader).
    outputContainers: ['reports']
  }
}

resource plan 'Microsoft.Web/serverfarms@2025-03-01' = {
  name: 'plan-${appName}'
  location: location
  kind: 'functionapp'
  sku: { tier: 'FlexConsumption', name: 'FC1' }
  properties: { reserved: true }
}

resource app 'Microsoft.Web/sites@2025-03-01' = {
  name: appName
  location: location
  tags: tags
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identity.id}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${host.properties.primaryEndpoints.blob}${packages.name}'
          authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identity.id }
        }
      }
      scaleAndConcurrency: { maximumInstanceCount: 40, instanceMemoryMB: 2048 }
      runtime: { name: 'node', version: '22' }
    }
  }
}

resource settings 'Microsoft.Web/sites/config@2025-03-01' = {
  parent: app
  name: 'appsettings'
  properties: union(coordinator.outputs.appSettings[0], {
    AzureWebJobsStorage__credential: 'managedidentity'
    AzureWebJobsStorage__clientId: identity.properties.clientId
    AzureWebJobsStorage__blobServiceUri: host.properties.primaryEndpoints.blob
    AzureWebJobsStorage__tableServiceUri: host.properties.primaryEndpoints.table
  })
  dependsOn: [hostRoles]
}

output appName string = app.name
