// Log Analytics + workspace-based Application Insights, both with local (key-based) auth off: telemetry is accepted
// only from callers with a Microsoft Entra token, i.e. the apps' managed identities holding Monitoring Metrics
// Publisher (see appRoles.bicep). One pair serves every app, so one query shows which region led when.

@description('Log Analytics workspace name.')
param workspaceName string

@description('Application Insights component name.')
param applicationInsightsName string

@description('Azure region of both resources.')
param location string

@description('Tags applied to both resources.')
param tags {*: string} = {}

@description('Days Log Analytics keeps data. 30 is included in the ingestion price; more is billed per GB per month.')
@minValue(30)
@maxValue(730)
param retentionInDays int = 30

resource workspace 'Microsoft.OperationalInsights/workspaces@2026-03-01' = {
  name: workspaceName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
    features: {
      // Queries and ingestion need Entra ID; the workspace's shared keys cannot be used.
      disableLocalAuth: true
    }
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    // Ingestion with the instrumentation key alone is refused; the apps authenticate with their identity
    // (APPLICATIONINSIGHTS_AUTHENTICATION_STRING = 'ClientId=<identity client id>;Authorization=AAD').
    DisableLocalAuth: true
  }
}

@description('Name of the Application Insights component.')
output applicationInsightsName string = applicationInsights.name

@description('Name of the Log Analytics workspace.')
output workspaceName string = workspace.name
