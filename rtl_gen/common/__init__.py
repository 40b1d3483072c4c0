"""Shared generator infrastructure: conversion, parameters, core packaging, stream blocks."""
