// Recommender system: collaborative filtering with two factor matrices.
// One sample is one rating r of user u for item v, given as one-hot vectors ou, ov;
// prediction <U[u], V[v]>, objective 0.5*(<U[u],V[v]> - r)^2 + lam/2 (|U[u]|^2 + |V[v]|^2).
// The one-hot dots select the rows exactly (products with 0 and 1 are exact).
nu = 32;                       // users
ni = 32;                       // items
k = 10;                        // latent factors
lam = 0.0;                     // L2 regularisation of the selected rows
n = 1;                         // threads

model_input ou[nu];            // one-hot user
model_input ov[ni];            // one-hot item
model_output r;                // the rating
model U[nu][k];                // user factors
model V[ni][k];                // item factors
gradient gu[nu][k] -> U;
gradient gv[ni][k] -> V;

iterator a[0:nu-1];
iterator b[0:ni-1];
iterator f[0:k-1];
iterator t[0:n-1];

learning_rate = 0.05;
mini_batch = 1000;

pu[f] = sum[a](ou[a] * U[a][f]);            // U[u]
qv[f] = sum[b](ov[b] * V[b][f]);            // V[v]
e = sum[f](pu[f] * qv[f]) - r;              // prediction error
gu[a][f] = e * (ou[a] * qv[f]) + lam * (ou[a] * pu[f]);   // rows other than u: 0
gv[b][f] = e * (ov[b] * pu[f]) + lam * (ov[b] * qv[f]);

U[a][f] = sum[t](U[a][f]) / n;
V[b][f] = sum[t](V[b][f]) / n;
